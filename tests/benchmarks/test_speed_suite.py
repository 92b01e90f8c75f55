"""benchmarks/speed_suite.py, the suite's one command, in its quick form: every benchmark runs (or is skipped with one line
where its peer library or device is missing) and writes one results file with the machine and the date."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
RUN = os.path.join(REPO, "benchmarks", "speed_suite.py")


def quick(tmp_path, *names: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, RUN, "--quick", "--results-dir", str(tmp_path), "--only", *names],
                          env=env, capture_output=True, text=True, timeout=600)


def check(done: subprocess.CompletedProcess, tmp_path, names) -> None:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = done.stdout.split(f"results in {tmp_path}:")[1].splitlines()[1:]
    status = dict(line.split(None, 1) for line in summary if line.strip())
    assert sorted(status) == sorted(names)
    for name in names:
        path = tmp_path / f"{name}.json"
        if status[name].startswith("skipped: "):  # one line says why, and nothing is written
            assert done.stdout.count(f"{name}: skipped: ") == 1 and not path.exists()
            continue
        assert status[name].startswith("ok"), status
        result = json.loads(path.read_text())
        machine = result["machine"]
        assert machine["python"] and (machine.get("cpu_count") or machine.get("cpus"))
        assert (result.get("date") or machine.get("date", ""))[:4].isdigit()
    assert sorted(os.listdir(tmp_path)) == sorted(f"{n}.json" for n in names if status[n].startswith("ok"))


@pytest.mark.slow
def test_quick_suite_in_process_benchmarks_and_skips(tmp_path):
    names = ["collector_throughput", "buffer", "sac_speed", "ppo_cartpole_peers", "dqn_cartpole_peers",
             "dqn_lunarlander_peers", "gpu_check"]
    check(quick(tmp_path, *names), tmp_path, names)


@pytest.mark.slow
def test_quick_suite_learning_speed_and_parallel_scaling(tmp_path):
    """The two benchmarks that start ding_lite processes (a parallel run spawns its collector and learner)."""
    names = ["impala_cartpole_learning", "parallel_scaling"]
    check(quick(tmp_path, *names), tmp_path, names)


@pytest.mark.slow
def test_the_cartpole_learning_benchmark_runs_another_config_under_its_name(tmp_path):
    """``--config`` (APPO beside IMPALA on the same seeds): the runs use that config, and its results file says so."""
    script = os.path.join(REPO, "benchmarks", "impala_cartpole_learning.py")
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / "appo.json"
    done = subprocess.run([sys.executable, script, "--config", "dizoo_configs/cartpole_appo.py", "--seeds", "0",
                           "--max-env-step", "300", "--output", str(out)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["config"] == "dizoo_configs/cartpole_appo.py" and [r["seed"] for r in result["runs"]] == [0]
    missing = subprocess.run([sys.executable, script, "--config", "dizoo_configs/nope.py"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "--config dizoo_configs/nope.py: no such file" in missing.stderr

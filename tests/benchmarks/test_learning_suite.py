"""benchmarks/learning_suite.py on its smoke suite (CartPole IMPALA, 2 seeds x 6,000 env steps, --jobs 2), real runs:
a Ctrl-C of the runner stops its runs cleanly and the next invocation resumes them to their budget, a third one
starts nothing, and the table holds the eval.csv rows at the checkpoints."""
import csv
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
RUNNER = os.path.join(REPO, "benchmarks", "learning_suite.py")
BUDGET = 6_000
SEEDS = (0, 1)


def runner(tmp_path, *extra: str) -> list:
    return [sys.executable, RUNNER, "smoke", "--runs-dir", str(tmp_path / "runs"), "--results-dir",
            str(tmp_path / "results"), "--jobs", "2", *extra]


def env() -> dict:
    return dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))


def eval_rows(run_dir) -> list:
    with open(os.path.join(run_dir, "eval.csv"), newline="") as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def read(path) -> dict:
    with open(path) as f:
        return json.load(f)


def wait_for_evaluation_past(run_dir, env_step: int, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if any(row["env_step"] >= env_step for row in eval_rows(run_dir)):
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"{run_dir}: no evaluation past env step {env_step} within {timeout_s} s")


@pytest.mark.slow
def test_interrupted_runs_resume_finished_runs_are_skipped_and_the_table_reads_eval_csv(tmp_path):
    runs = tmp_path / "runs"
    seed0 = runs / "cartpole_impala_seed0"

    # 1. Ctrl-C to the runner mid-way: each run gets one SIGINT and writes result.json (interrupted) and ckpt_last.
    first = subprocess.Popen(runner(tmp_path), env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
    try:
        wait_for_evaluation_past(seed0, 1_000)
        os.kill(first.pid, signal.SIGINT)
        output, _ = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 130, output
    stopped = read(seed0 / "result.json")
    assert stopped["stop_reason"] == "interrupted" and 1_000 <= stopped["env_step"] < BUDGET, (stopped, output)
    assert (seed0 / "ckpt" / "ckpt_last.pth.tar").is_file()
    rows_at_stop = eval_rows(seed0)

    # 2. The next invocation resumes the run (same -c and budget, --resume) to its budget, keeping its evaluations.
    second = subprocess.run(runner(tmp_path), env=env(), capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "resume cartpole_impala seed 0" in second.stdout, second.stdout
    for seed in SEEDS:
        result = read(runs / f"cartpole_impala_seed{seed}" / "result.json")
        assert result["stop_reason"] == "max_env_step" and result["env_step"] >= BUDGET, result
    rows = eval_rows(seed0)
    assert rows[:len(rows_at_stop)] == rows_at_stop and len(rows) > len(rows_at_stop)
    launches = (runs / "launches.jsonl").read_text().splitlines()
    assert [json.loads(line)["resume"] for line in launches if json.loads(line)["seed"] == 0] == [False, True]

    # 3. Everything finished: a third invocation starts no process and leaves the runs as they are.
    before = {seed: (runs / f"cartpole_impala_seed{seed}" / "result.json").stat().st_mtime_ns for seed in SEEDS}
    third = subprocess.run(runner(tmp_path), env=env(), capture_output=True, text=True, timeout=120)
    assert third.returncode == 0, third.stdout + third.stderr
    assert third.stdout.count("skip cartpole_impala seed") == 2 and "start " not in third.stdout, third.stdout
    assert (runs / "launches.jsonl").read_text().splitlines() == launches
    assert {seed: (runs / f"cartpole_impala_seed{seed}" / "result.json").stat().st_mtime_ns for seed in SEEDS} == before

    # 4. The table: each seed's return at a checkpoint is its eval.csv row with the largest env step at or below it
    # (at the budget, the final evaluation, which a run takes at the first env step past it); IQM of 2 = their mean.
    report = read(tmp_path / "results" / "smoke.json")
    (task,) = report["tasks"]
    assert [c["env_step"] for c in task["checkpoints"]] == [2_000, BUDGET]
    for checkpoint in task["checkpoints"]:
        returns = []
        for value in checkpoint["per_seed"]:
            run_dir = runs / f"cartpole_impala_seed{value['seed']}"
            final = read(run_dir / "result.json")["env_step"]
            limit = final if checkpoint["env_step"] == BUDGET else checkpoint["env_step"]
            row = [r for r in eval_rows(run_dir) if r["env_step"] <= limit][-1]
            assert (value["return"], value["at_env_step"]) == (row["return_mean"], row["env_step"]), value
            returns.append(row["return_mean"])
        assert checkpoint["iqm"] == pytest.approx(np.mean(returns), abs=0.051)  # rounded to 0.1
        assert checkpoint["met"] == (checkpoint["iqm"] >= checkpoint["target"])
    assert {r["state"] for r in task["runs"]} == {"finished"}
    here = json.loads(launches[0])["cpu_model"]  # each run's CPU, from its launches (both on this machine)
    assert [r["cpu_models"] for r in task["runs"]] == [[here], [here]]
    for seed in SEEDS:  # the small files of finished runs, copied for committing
        copied = tmp_path / "results" / "runs" / "smoke" / "cartpole_impala" / f"seed{seed}"
        assert sorted(os.listdir(copied)) == ["eval.csv", "result.json", "total_config.py"]
        assert (copied / "eval.csv").read_text() == (runs / f"cartpole_impala_seed{seed}" / "eval.csv").read_text()
    assert (tmp_path / "results" / "smoke_cartpole_impala.png").stat().st_size > 0


@pytest.mark.slow
def test_a_runs_dir_inside_the_repository_is_refused(tmp_path):
    inside = os.path.join(REPO, "benchmarks", "results", "runs_here")
    done = subprocess.run([sys.executable, RUNNER, "smoke", "--runs-dir", inside, "--results-dir", str(tmp_path)],
                          env=env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and not os.path.exists(inside)
    assert done.stderr.strip().splitlines() == [
        f"learning_suite: error: --runs-dir {inside} is inside the repository {REPO}: run directories hold large "
        f"checkpoints; give a path outside it (default ~/ding_lite_runs/smoke)"]


def test_a_resumed_run_still_going_is_read_past_its_last_interruption():
    """While a resumed run trains, its result.json is the one its interruption wrote (99,601 env steps here) and its
    eval.csv goes on: the table takes the evaluations up to where eval.csv has got."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import learning_suite_report as report
    evals = {"env_step": np.array([90_001, 100_001, 110_001]), "return_mean": np.array([5.0, 6.0, 7.0]),
             "wall_time": np.array([1800.0, 1990.0, 2100.0]), "episodes": np.array([10, 10, 10])}
    run = {"evals": evals, "result": {"env_step": 99_601, "wall_time": 1860.0, "stop_reason": "interrupted"}}
    assert report.covered(run) == 110_001 and report.covered(run, "wall_time") == 2100.0
    assert report.value_at(run, 100_000, 300_000, "partial")["return"] == 6.0  # 100,001: one resume's step past
    assert report.value_at(run, 99_000, 300_000, "partial")["return"] == 5.0  # 0.1% past 99k is short of 100,001
    assert report.value_at(run, 200_000, 300_000, "partial") is None  # not there yet
    finished = {"evals": evals, "result": {"env_step": 110_001, "wall_time": 2100.0, "stop_reason": "max_env_step"}}
    assert report.value_at(finished, 110_001, 110_001, "finished")["return"] == 7.0


def test_a_seed_that_finished_short_of_the_bar_is_named_and_counts_in_the_median():
    """A bar like Pong's (20 within a median of 2M env steps): a finished seed that never got there is 'not by its
    end' (not '-', which is a seed still going), and the median counts it as beyond every seed that got there."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import learning_suite
    import learning_suite_report as report
    task = learning_suite.Task(name="pong", config="c.py", seeds=[0, 1, 2], env_step=2_500, checkpoints=[],
                               reach=20.0, reach_within=2_000)

    def run(returns, stop_reason, env_step):
        steps = np.arange(1, len(returns) + 1) * 500
        evals = {"env_step": steps, "return_mean": np.array(returns, dtype=float),
                 "wall_time": steps / 100.0, "episodes": np.full(len(returns), 10)}
        return {"evals": evals, "result": {"env_step": env_step, "wall_time": env_step / 100.0,
                                           "stop_reason": stop_reason}, "source": "run"}
    never = run([-21, -5, 3, 15, 19], "max_env_step", 2_500)  # finished at its budget below 20
    going = run([-21, 21], "interrupted", 1_000)
    reach = report.task_report(task, {0: never, 1: going, 2: None})["reach"]
    assert reach["never"] == ["0"] and reach["median_env_step"] is None and reach["met"] is None
    assert report.reach_line(reach) == ("first evaluation at or above 20.0: seed 0 not by its end, seed 1 1,000, "
                                        "seed 2 -; median - (target <= 2,000: open)")
    done = run([-21, -3, 20], "max_env_step", 2_500)  # seed 2 got there at 1,500
    reach = report.task_report(task, {0: never, 1: going, 2: done})["reach"]
    assert reach["median_env_step"] == 1_500 and reach["met"] is True  # median of 1,000, 1,500 and never
    late = run([-21, -3, 5, 18, 20], "max_env_step", 2_500)  # seed 2 at 2,500: past the bar
    reach = report.task_report(task, {0: never, 1: late, 2: late})["reach"]
    assert reach["median_env_step"] == 2_500 and reach["met"] is False
    reach = report.task_report(task, {0: never, 1: never, 2: late})["reach"]
    assert reach["never"] == ["0", "1"] and reach["met"] is False
    assert report.reach_line(reach).endswith("seed 2 2,500; median beyond the budget (target <= 2,000: missed)")
    # a seed still going (or not started) does not hold the verdict open when more than half the seeds decide it
    reach = report.task_report(task, {0: never, 1: never, 2: None})["reach"]
    assert (reach["median_env_step"], reach["met"]) == (None, False)
    assert report.reach_line(reach).endswith("seed 2 -; median beyond the budget (target <= 2,000: missed)")
    reach = report.task_report(task, {0: never, 1: late, 2: None})["reach"]  # inf and 2,500: both past 2,000
    assert reach["met"] is False and report.reach_line(reach).endswith("median past 2,000 (target <= 2,000: missed)")
    reach = report.task_report(task, {0: going, 1: done, 2: None})["reach"]  # 1,000 and 1,500: both within
    assert reach["met"] is True and report.reach_line(reach).endswith("median at most 2,000 (target <= 2,000: met)")


def test_the_report_removes_the_plot_of_a_task_it_holds_no_run_of(tmp_path):
    """A plot left from runs the report no longer holds (the seed list changed, the runs moved) is removed, not kept
    beside a table that says 'not started'."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import learning_suite
    results = tmp_path / "results"
    results.mkdir()
    (results / "smoke_cartpole_impala.png").write_bytes(b"a plot of runs that are gone")
    suite = learning_suite.load_suite("smoke")
    learning_suite.write_report(suite, str(tmp_path / "runs"), str(results), learning_suite.run_dir,
                                learning_suite.machine_info(), "abc")
    assert sorted(os.listdir(results)) == ["smoke.json"]


def test_a_run_finished_on_another_machine_is_not_run_again_and_keeps_its_commits(tmp_path, capsys):
    """A suite spans sittings on machines that do not keep ~/ding_lite_runs: a seed with no run directory whose
    committed copy says it finished is skipped (not trained again from scratch), the report reads it from the copy
    and keeps the commits the earlier report recorded for it; a seed with neither is planned from scratch."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import learning_suite
    results, runs = tmp_path / "results", tmp_path / "runs"
    copy = results / "runs" / "smoke" / "cartpole_impala" / "seed0"
    copy.mkdir(parents=True)
    (copy / "eval.csv").write_text("train_iter,env_step,wall_time,return_mean,return_std,return_min,return_max,"
                                   "episodes\n0,0,0.5,20.0,1,19,21,10\n90,2000,9.0,150.0,1,149,151,10\n"
                                   "300,6001,30.0,480.0,1,479,481,10\n")
    (copy / "result.json").write_text(json.dumps({"env_step": 6_001, "stop_reason": "max_env_step",
                                                  "wall_time": 30.0, "final_return": 480.0, "best_return": 480.0}))
    earlier = {"machine": {"cpu_model": "AMD EPYC"},  # a report from before runs recorded their CPUs
               "tasks": [{"task": "cartpole_impala", "runs": [{"seed": 0, "commits": ["c0ffee"]}]}]}
    (results / "smoke.json").write_text(json.dumps(earlier))
    suite = learning_suite.load_suite("smoke")

    todo = learning_suite.plan(suite, str(runs), retry_failed=False, results_dir=str(results))
    assert [(task.name, seed, resume) for task, seed, resume in todo] == [("cartpole_impala", 1, False)]
    assert f"skip cartpole_impala seed 0: finished, as its committed copy says ({copy})" in capsys.readouterr().out

    report = learning_suite.write_report(suite, str(runs), str(results), learning_suite.run_dir,
                                         learning_suite.machine_info(), "abc")
    (seed0, seed1) = report["tasks"][0]["runs"]
    assert (seed0["state"], seed0["read_from"], seed0["commits"], seed0["env_step"]) == (
        "finished", "copy", ["c0ffee"], 6_001)
    assert (seed1["state"], seed1["commits"], seed1["cpu_models"]) == ("not started", [], [])
    assert report["tasks"][0]["checkpoints"][0]["per_seed"][0]["return"] == 150.0
    # the CPU it ran on is the earlier report's machine, not this one's, and stays so in the next report
    assert seed0["cpu_models"] == ["AMD EPYC"]
    assert "| 0 | finished (max_env_step) | 6,001 | 30 s | 200 | 480 | 480 | AMD EPYC |" in capsys.readouterr().out
    report = learning_suite.write_report(suite, str(runs), str(results), learning_suite.run_dir,
                                         {**learning_suite.machine_info(), "cpu_model": "Intel Xeon"}, "abd")
    assert report["tasks"][0]["runs"][0]["cpu_models"] == ["AMD EPYC"]


def test_a_tasks_sets_reach_every_run_and_a_malformed_one_is_refused(tmp_path):
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import learning_suite
    suite = tmp_path / "suite.py"
    task = ('dict(name="pong", config="dizoo_configs/pong_ppo.py", seeds=[0], env_step=1000, checkpoints=[1000], '
            'sets=[{}])')
    suite.write_text(f"TASKS = [{task.format(repr('env.manager.type=envpool'))}]")
    (loaded,) = learning_suite.load_suite(str(suite)).tasks
    for resume in (False, True):
        cmd = learning_suite.command(loaded, 0, resume, 1)
        assert cmd[cmd.index("--set", cmd.index("torch_threads=1")) + 1] == "env.manager.type=envpool", cmd
        assert ("--resume" in cmd) == resume
    suite.write_text(f"TASKS = [{task.format(repr('env.manager.type'))}]")
    with pytest.raises(learning_suite.UserError, match=r"task 'pong': sets=\['env.manager.type'\]: each entry is one "
                                                       r"'key=value' override"):
        learning_suite.load_suite(str(suite))


def test_only_chooses_the_runs_and_the_report_keeps_every_task(tmp_path):
    """``--only walker2d`` used to write a mujoco_sac.json of Walker2d alone, dropping the finished tasks' rows."""
    suite = tmp_path / "two.py"
    task = ('dict(name={!r}, config="benchmarks/suites/configs/cartpole_impala_smoke.py", seeds=[0], env_step=1000, '
            'checkpoints=[1000])')
    suite.write_text(f"TASKS = [{task.format('first')}, {task.format('second')}]")
    done = subprocess.run([sys.executable, RUNNER, str(suite), "--only", "second", "--report-only", "--runs-dir",
                           str(tmp_path / "runs"), "--results-dir", str(tmp_path / "results")], env=env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [t["task"] for t in read(tmp_path / "results" / "two.json")["tasks"]] == ["first", "second"]


def test_seed_starts_the_runs_of_that_seed_only_and_refuses_a_seed_no_task_lists(tmp_path):
    suite = tmp_path / "seeds.py"
    suite.write_text('TASKS = [dict(name="one", config="benchmarks/suites/configs/cartpole_impala_smoke.py", '
                     'seeds=[0, 1], env_step=500, checkpoints=[500])]')
    args = [sys.executable, RUNNER, str(suite), "--runs-dir", str(tmp_path / "runs"), "--results-dir",
            str(tmp_path / "results"), "--jobs", "1"]
    bad = subprocess.run(args + ["--seed", "5"], env=env(), capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "task 'one' has no seed 5 (its seeds: [0, 1])" in bad.stderr, bad.stderr
    done = subprocess.run(args + ["--seed", "1"], env=env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(tmp_path / "runs" / "launches.jsonl") as f:
        assert [(r["task"], r["seed"]) for r in map(json.loads, f)] == [("one", 1)]
    assert sorted(os.listdir(tmp_path / "runs")) == ["launches.jsonl", "logs", "one_seed1"]


def _suite_files() -> list:
    """Every shipped suite: benchmarks/suites/*.py and the studies that are suite files (they define TASKS)."""
    files = [os.path.join(REPO, "benchmarks", "suites", n) for n in os.listdir(os.path.join(REPO, "benchmarks",
                                                                                                 "suites"))]
    studies = os.path.join(REPO, "benchmarks", "studies")
    files += [os.path.join(studies, n) for n in os.listdir(studies)
              if n.endswith(".py") and "\nTASKS = " in open(os.path.join(studies, n)).read()]
    return sorted(f for f in files if f.endswith(".py"))


@pytest.mark.parametrize("path", _suite_files(), ids=lambda p: os.path.relpath(p, REPO))
def test_every_shipped_suite_loads_and_its_configs_compile_with_its_sets(path):
    # A suite runs for hours, sittings apart: a misspelt override or config path in one should fail here, not when
    # its run starts.
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import learning_suite

    from ding_lite.config import compile_config, read_config_file
    from ding_lite.config.overrides import parse_value
    for task in learning_suite.load_suite(path).tasks:
        cfg = compile_config(read_config_file(os.path.join(REPO, task.config)), overrides=list(task.sets))
        for item in task.sets:  # each override reached the compiled config
            key, value = item.split("=", 1)
            node = cfg
            for part in key.split("."):
                node = node[part]
            assert node == parse_value(value), (task.name, item, node)


def test_the_commit_is_dirty_for_code_changes_not_for_the_reports_own_outputs(tmp_path):
    """A report rerun over the results an earlier report committed (its JSON and plots) records a clean commit; a
    change anywhere else, or under a results folder that is not this report's, marks it ``+dirty``."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import learning_suite
    repo = tmp_path / "repo"
    (repo / "benchmarks" / "results").mkdir(parents=True)
    (repo / "benchmarks" / "studies" / "results").mkdir(parents=True)
    files = {"policy.py": "lr = 3e-4\n", "benchmarks/results/suite.json": "{}\n",
             "benchmarks/studies/results/pilot.json": "{}\n"}
    for name, text in files.items():
        (repo / name).write_text(text)

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                       capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "runs")
    results = str(repo / "benchmarks" / "results")
    clean = learning_suite.git_commit(results, str(repo))
    assert len(clean) == 40 and "+" not in clean
    (repo / "benchmarks" / "results" / "suite.json").write_text('{"tasks": []}\n')  # the report's own output
    assert learning_suite.git_commit(results, str(repo)) == clean
    (repo / "benchmarks" / "studies" / "results" / "pilot.json").write_text('{"tasks": []}\n')  # another report's
    assert learning_suite.git_commit(results, str(repo)) == clean + "+dirty"
    git("checkout", "-q", "--", "benchmarks/studies")
    (repo / "policy.py").write_text("lr = 1e-3\n")  # code the runs would run
    assert learning_suite.git_commit(results, str(repo)) == clean + "+dirty"
    assert learning_suite.git_commit(str(tmp_path / "elsewhere"), str(repo)) == clean + "+dirty"

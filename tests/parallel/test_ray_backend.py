"""``--backend ray`` on a local Ray instance: the same roles as Ray actors learn CartPole and shut down cleanly; the
run's private instance listens on the loopback address only, and goes with its learner, also one killed with
SIGKILL."""
import ipaddress
import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from easydict import EasyDict

from entry_helpers import CARTPOLE, read_eval_csv, read_result
from test_parallel_signals import _assert_all_gone, _descendants

ray = pytest.importorskip("ray", reason="the Ray backend needs the extra: pip install 'ding_lite[ray]'")

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def _ray_workers(wait_s: float = 15.0) -> int:
    """The Ray worker processes (``ray::...``) on the machine once they have had ``wait_s`` to exit: a worker of
    the stopped instance ends a moment after the raylet that killed it (seconds, on a busy machine: one was still
    there when the machine also ran two training processes); a leaked one stays."""
    deadline = time.monotonic() + wait_s
    while True:
        out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        n = sum(line.startswith("ray::") for line in out.splitlines())
        if n == 0 or time.monotonic() > deadline:
            return n
        time.sleep(0.5)


def test_ray_backend_learns_and_shuts_down(cli, in_tmp):
    res = cli("-m", "parallel", "--backend", "ray", "-c", CARTPOLE, "-q", "--env-step", "100000",
              "--set", "parallel.collector_num=1", "--set", "env.stop_value=300")
    assert res.exit_code == 0, res.output
    run = in_tmp / "cartpole_impala_seed0"
    result = read_result(run)
    assert result["stop_reason"] == "stop_value", result
    assert result["parallel"]["backend"] == "ray" and result["parallel"]["restarts"] == {}
    _, rows = read_eval_csv(run)
    assert float(rows[0]["return_mean"]) < 100 <= max(float(r["return_mean"]) for r in rows)
    assert not ray.is_initialized()  # the run's own Ray instance is gone again
    assert _ray_workers() == 0



def test_a_model_class_only_the_learner_can_import_reaches_the_actors(in_tmp, monkeypatch):
    """The run's model is an instance of a class from a module beside the user's script (on the learner's sys.path
    only). Each actor unpickles its spec, model included, before any ding_lite code runs in it, so the module must be
    importable there already: the private Ray instance's raylet, and every worker it starts, inherits the learner's
    import paths in PYTHONPATH. The learner's own PYTHONPATH is as it was."""
    (in_tmp / "user_models").mkdir()
    (in_tmp / "user_models" / "my_vac.py").write_text(
        "from ding_lite.model import VAC\n\n\nclass MyVAC(VAC):\n    pass\n")
    monkeypatch.syspath_prepend(str(in_tmp / "user_models"))
    monkeypatch.setenv("PYTHONPATH", "/nonexistent-before")
    from my_vac import MyVAC

    from ding_lite.config import read_config_file
    from ding_lite.entry import parallel_pipeline
    main, create = read_config_file(CARTPOLE)
    main = {**main, "parallel": {"collector_num": 1, "backend": "ray"}}
    model = MyVAC(obs_shape=4, action_shape=2, **{k: v for k, v in main["policy"].get("model", {}).items()})
    result = parallel_pipeline((main, create), seed=0, model=model, max_train_iter=8, quiet=True)
    assert result["train_iter"] >= 8 and result["parallel"]["restarts"] == {}, result
    assert not ray.is_initialized()
    assert os.environ["PYTHONPATH"] == "/nonexistent-before"


def _listening_sockets(pids):
    """(address, port, pid) of every TCP socket listening, and every UDP socket bound, in the processes ``pids``
    (their socket inodes from /proc/<pid>/fd, matched in /proc/net/{tcp,tcp6,udp,udp6})."""
    owner = {}
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                owner[int(target[8:-1])] = pid
    found = []
    for table, family, state in (("tcp", socket.AF_INET, "0A"), ("tcp6", socket.AF_INET6, "0A"),
                                 ("udp", socket.AF_INET, "07"), ("udp6", socket.AF_INET6, "07")):
        with open(f"/proc/net/{table}") as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                if fields[3] != state or int(fields[9]) not in owner:
                    continue
                hex_ip, hex_port = fields[1].split(":")
                raw = bytes.fromhex(hex_ip)  # 32-bit words in host (little-endian) order
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                found.append((socket.inet_ntop(family, raw), int(hex_port, 16), owner[int(fields[9])]))
    return found


def _is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return ip.is_loopback or (ip.version == 6 and ip.ipv4_mapped is not None and ip.ipv4_mapped.is_loopback)


def test_the_private_ray_instance_listens_on_the_loopback_address_only():
    """Started as a run starts it (no parallel.ray_address), with an actor running: the GCS, the raylet, the agents,
    the workers and the driver listen on 127.0.0.1 only, so no other machine can reach (and run code on) it."""
    from ding_lite.parallel.ray_backend import _init_ray

    assert not ray.is_initialized()
    _init_ray(ray, EasyDict(ray_address=None, collector_num=1))
    try:
        @ray.remote(num_cpus=0)
        class Probe:
            def pid(self):
                return os.getpid()

        probe = Probe.remote()
        pids = [os.getpid()] + _descendants(os.getpid())
        assert ray.get(probe.pid.remote()) in pids
        names = {}
        for pid in pids:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    names[pid] = os.path.basename(f.read().split(b"\0")[0].decode())
            except OSError:
                pass
        sockets = _listening_sockets(pids)
        assert {"gcs_server", "raylet"} <= {names.get(pid) for _, _, pid in sockets}, sockets  # not vacuous
        exposed = [(address, port, names.get(pid)) for address, port, pid in sockets if not _is_loopback(address)]
        assert not exposed, f"listening beyond the loopback address: {exposed}"
    finally:
        ray.shutdown()


# A learner that starts its private instance as a run does, with an actor, prints the actor's pid, then waits.
_DRIVER = textwrap.dedent("""
    import os, time
    import ray
    from easydict import EasyDict
    from ding_lite.parallel.ray_backend import _init_ray

    _init_ray(ray, EasyDict(ray_address=None, collector_num=1))

    @ray.remote(num_cpus=0)
    class Probe:
        def pid(self):
            return os.getpid()

    probe = Probe.remote()
    print(ray.get(probe.pid.remote()), flush=True)
    time.sleep(300)
""")


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return os.path.basename(f.read().split(b"\0")[0].decode())
    except OSError:
        return ""


def test_a_killed_learner_leaves_no_ray_process_behind():
    """kill -9 of the learner: the GCS, the raylet, the agents Ray starts under it (which outlived a killed learner
    by minutes before the reaper) and the actor's worker are all gone within seconds (ray_reaper.py)."""
    proc = subprocess.Popen([sys.executable, "-c", _DRIVER], stdout=subprocess.PIPE, text=True)
    try:
        actor = int(proc.stdout.readline())
        left = _descendants(proc.pid)
        names = {_name(pid) for pid in left}
        assert actor in left and {"gcs_server", "raylet"} <= names, names
        assert any(name.startswith("ray::") and "Agent" in name for name in names), names  # what used to linger
    except BaseException:
        proc.kill()
        raise
    proc.kill()  # SIGKILL: no clean-up code runs in the learner
    proc.wait(10)
    _assert_all_gone(left, within=15.0)

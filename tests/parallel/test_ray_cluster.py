"""``--backend ray`` on a simulated multi-node cluster (``ray.cluster_utils.Cluster``: 3 nodes of 1 CPU on this
machine): collectors on different nodes, a node lost mid-run, SIGTERM and Ctrl-C, workers that cannot be placed,
a private instance when another cluster runs here, and PPO's synchronous rounds.

Each run is the ``ding_lite`` command in a subprocess joined to the cluster, as a user would start it."""
import datetime
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from entry_helpers import CARTPOLE, REPO, SMALL

ray = pytest.importorskip("ray", reason="the Ray backend needs the extra: pip install 'ding_lite[ray]'")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.ray]

RUN = "cartpole_impala_seed0"
STARTED = re.compile(r"(collector|evaluator) (\d+) started on node ([0-9a-f]+)")


@pytest.fixture(scope="module")
def cluster():
    """A head node and two worker nodes of 1 CPU each (the learner joins at the head, as a driver)."""
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    for _ in range(2):
        c.add_node(num_cpus=1)
    c.wait_for_nodes()
    yield c
    c.shutdown()


@pytest.fixture
def driver(cluster):
    """This test process joined to the cluster (to hold its CPUs with blocker actors); left again afterwards."""
    ray.init(address=cluster.address, logging_level="WARNING")
    yield ray
    ray.shutdown()


@ray.remote(num_cpus=1)
class Blocker:
    """Holds one CPU of the cluster while it lives."""

    def node(self) -> str:
        return ray.get_runtime_context().get_node_id()


class Run:
    """A ``ding_lite -m parallel --backend ray`` run in a subprocess; its train.log is read as it grows."""

    def __init__(self, tmp_path, *args: str, address=None, env=None, config=CARTPOLE, run=RUN) -> None:
        self.dir = tmp_path / run
        cmd = [sys.executable, "-m", "ding_lite.cli", "-m", "parallel", "--backend", "ray", "-c", config,
               "-q", *SMALL, "--set", "env.stop_value=None", "--set", "policy.learn.learner.hook.log_show_after_iter=10",
               *args]
        if address is not None:
            cmd += ["--set", f"parallel.ray_address={address!r}"]
        env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {}))
        self.proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)

    def log(self) -> str:
        path = self.dir / "log" / "train.log"
        return path.read_text() if path.exists() else ""

    def wait_for(self, pattern: str, timeout: float = 90.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.log())
            if found:
                return found
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.kill()
        raise AssertionError(f"no {pattern!r} in train.log:\n{self.log()}\n{self.proc.communicate()[0]}")

    def started(self) -> dict:
        """'collector0' -> node id prefixes it started on, in order."""
        out: dict = {}
        for role, rank, node in STARTED.findall(self.log()):
            out.setdefault(f"{role}{rank}", []).append(node)
        return out

    def finish(self, timeout: float = 120.0) -> str:
        try:
            return self.proc.communicate(timeout=timeout)[0]
        finally:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def _actor_processes() -> set:
    """PIDs of ding_lite's actors on this machine (Ray titles their processes ``ray::<ActorClass>...``)."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return {int(line.split()[0]) for line in out.splitlines()
            if "ray::RayCollector" in line or "ray::RayEvaluator" in line}


def _node_with(cluster, prefix: str):
    return next(n for n in cluster.list_all_nodes() if n.node_id.startswith(prefix))


def test_collectors_spread_and_a_lost_node_is_replaced(cluster, tmp_path):
    run = Run(tmp_path, "--env-step", "1000000", "--set", "parallel.collector_num=2", address=cluster.address)
    run.wait_for(r"collector 0 started on node[\s\S]*collector 1 started on node|"
                 r"collector 1 started on node[\s\S]*collector 0 started on node")
    first = run.started()
    assert first["collector0"][0] != first["collector1"][0], first  # SPREAD: one collector per node
    run.wait_for(r"train_iter 20 \|")
    head = cluster.head_node.node_id
    victim_rank = next(r for r in (0, 1) if not head.startswith(first[f"collector{r}"][0]))
    victim = _node_with(cluster, first[f"collector{victim_rank}"][0])
    cluster.remove_node(victim)
    try:
        run.wait_for(rf"collector {victim_rank} crashed \(.*\); restarting it", timeout=60)
        run.wait_for(rf"collector {victim_rank} started on node [\s\S]*collector {victim_rank} started on node",
                     timeout=60)
        # the replacement delivers: a progress line after it started with both collectors' steps; then the run is
        # asked to stop as `ding_lite tune` asks it (a stop_request file), and ends cleanly with that reason
        run.wait_for(rf"collector {victim_rank} started on node [\s\S]*collector {victim_rank} started on node"
                     rf"[\s\S]*env steps/s \([\d,]+, [\d,]+\) \|")
        (run.dir / "stop_request").write_text("node_test_done\n")
        out = run.finish()
    finally:
        cluster.add_node(num_cpus=1)  # the module's cluster keeps its 3 nodes
        cluster.wait_for_nodes()
    assert run.proc.returncode == 0, out
    result = json.loads((run.dir / "result.json").read_text())
    assert result["stop_reason"] == "node_test_done", result
    par = result["parallel"]
    assert par["restarts"].get(f"collector{victim_rank}", 0) >= 1, par
    nodes = par["placements"][f"collector{victim_rank}"]
    assert len(nodes) >= 2 and nodes[-1] != victim.node_id, (nodes, victim.node_id)


# SIGINT is in the long tier (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): SIGTERM takes the same path in
# CI.
@pytest.mark.parametrize("sig", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.long)],
                         ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_under_ray_keeps_the_run_and_ends_every_actor(cluster, tmp_path, sig):
    before = _actor_processes()  # left by other tests (a removed node's, still exiting)
    run = Run(tmp_path, "--env-step", "1000000", "--set", "parallel.collector_num=2", address=cluster.address)
    run.wait_for(r"train_iter 20 \|")
    for worker in ("collector 0", "collector 1", "evaluator 0"):
        run.wait_for(rf"{worker} started on node")
    actors = _actor_processes() - before
    assert len(actors) >= 3, actors  # two collectors and the evaluator
    start = time.monotonic()
    run.proc.send_signal(sig)
    out = run.finish(timeout=20)
    assert time.monotonic() - start < 10, f"took {time.monotonic() - start:.1f} s to stop"
    assert run.proc.returncode == 128 + sig, out  # 143 for SIGTERM, 130 for SIGINT, as under the local backend
    assert ("terminated" if sig == signal.SIGTERM else "interrupted") in out
    assert (run.dir / "ckpt" / "ckpt_last.pth.tar").exists()
    result = json.loads((run.dir / "result.json").read_text())
    assert result["stop_reason"] == "interrupted" and result["train_iter"] >= 20
    with open(run.dir / ".lock", "a") as f:  # released: a --resume may take it
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    deadline = start + 10
    while actors & _actor_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not actors & _actor_processes(), "actors of the run still alive 10 s after the signal"


# Long tier, left out of .ci/run (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): CI reports an unplaceable
# collector (test_no_placeable_collector_stops_the_run_with_one_line) and restarts a lost one on another node
# (test_collectors_spread_and_a_lost_node_is_replaced); a collector starting once a node joins is this test's alone.
@pytest.mark.long
def test_a_collector_that_cannot_be_placed_is_reported_and_joins_later(cluster, driver, tmp_path):
    blockers = [Blocker.remote() for _ in range(2)]  # 2 of the 3 CPUs taken: room for one collector
    ray.get([b.node.remote() for b in blockers])
    run = Run(tmp_path, "--env-step", "1000000", "--set", "parallel.collector_num=2", address=cluster.address)
    try:
        line = run.wait_for(r"collector (\d) cannot be placed: it needs 1 CPU and the Ray cluster has 0 of 3 CPUs "
                            r"free", timeout=60)
        waiting = line.group(1)
        log = run.log()
        started = re.search(r"^(\S+ \S+) collector \d started on node", log, re.M).group(1)
        reported = re.search(r"^(\S+ \S+) collector \d cannot be placed", log, re.M).group(1)
        delay = (datetime.datetime.fromisoformat(reported.replace(",", "."))
                 - datetime.datetime.fromisoformat(started.replace(",", "."))).total_seconds()
        assert delay < 30, f"reported {delay:.1f} s after the first collector started"
        run.wait_for(r"; collectors 1/2\)")  # the progress line shows the shortfall
        ray.kill(blockers[0])
        joined = run.wait_for(rf"collector {waiting} started on node", timeout=60)
        # both collectors deliver: a progress line after the join without the shortfall
        run.wait_for(rf"collector {waiting} started on node[\s\S]*env steps/s \([\d,]+, [\d,]+\) \|")
        assert joined
    finally:
        run.proc.send_signal(signal.SIGTERM)
        out = run.finish(timeout=30)
    assert run.proc.returncode == 143, out


def test_no_placeable_collector_stops_the_run_with_one_line(cluster, driver, tmp_path):
    blockers = [Blocker.remote() for _ in range(3)]
    ray.get([b.node.remote() for b in blockers])
    run = Run(tmp_path, "--env-step", "30000", "--set", "parallel.collector_num=1",
              "--set", "parallel.collector_wait_s=5", address=cluster.address)
    out = run.finish(timeout=90)
    assert run.proc.returncode == 2, out
    errors = [line for line in out.splitlines() if line.startswith("ding_lite: error")]
    assert len(errors) == 1 and "no collector has run for 5 s (parallel.collector_wait_s)" in errors[0], out
    assert "Traceback" not in out


# Long tier, left out of .ci/run (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): CI starts private instances
# in tests/parallel/test_ray_backend.py.
@pytest.mark.long
def test_no_address_starts_a_private_instance_beside_a_running_cluster(cluster, tmp_path):
    """RAY_ADDRESS points at the running cluster; a run without parallel.ray_address still starts its own instance
    (before: ``ValueError: When connecting to an existing cluster, num_cpus and num_gpus must not be provided``)."""
    run = Run(tmp_path, "--env-step", "3000", "--set", "parallel.collector_num=1",
              env={"RAY_ADDRESS": cluster.address})
    out = run.finish()
    assert run.proc.returncode == 0, out
    nodes = json.loads((run.dir / "result.json").read_text())["parallel"]["placements"]["collector0"]
    assert nodes[0] not in {n.node_id for n in cluster.list_all_nodes()}
    # the private instance uses Ray's default, token authentication, named: no warning about it on every run
    assert "Token authentication" not in out, out


def test_ppo_collects_in_synchronous_rounds_and_learns(cluster, tmp_path):
    """parallel.sync on Ray: one collect call per collector and weight version, so the policy lag is 0 and each round
    of 2 segments (2 collectors x 4 envs = PPO's collection of 8 unrolls) is one update; CartPole reaches 475
    (serial seeds 0-9: a median of 7,680 env steps; local parallel: 9.5k)."""
    ppo = os.path.join(REPO, "dizoo_configs", "cartpole_ppo.py")
    run = Run(tmp_path, "--env-step", "50000", "--set", "env.stop_value=475", "--set", "parallel.collector_num=2",
              "--set", "env.collector_env_num=4", "--set", "env.evaluator_env_num=5", "--set",
              "env.n_evaluator_episode=5", address=cluster.address, config=ppo, run="cartpole_ppo_seed0")
    out = run.finish(timeout=240)
    assert run.proc.returncode == 0, out + run.log()
    result = json.loads((run.dir / "result.json").read_text())
    stats = result["parallel"]
    assert result["stop_reason"] == "stop_value" and result["best_return"] >= 475, (result, run.log()[-3000:])
    assert stats["policy_lag"]["max"] == 0 and stats["dropped_stale"] == 0, stats
    # every update trained on one whole round; a round may be under way when the stop comes
    assert stats["segments"] - 2 <= 2 * result["train_iter"] <= stats["segments"], (stats, result["train_iter"])

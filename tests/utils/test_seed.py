"""The seeding scheme (``ding_lite.utils.seed``): every env seed of a run is distinct, serial and parallel (64
collectors of 8 envs, restarted and resumed, and the evaluators), and the same config and seed give the same seeds.
The seeds are read from the code paths that use them: ``build``, the serial transport's resume, the parallel
transport's worker specs and final evaluation, and the worker roles."""
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from entry_helpers import CARTPOLE, REPO

import ding_lite.entry.build as build_module
import ding_lite.envs
import ding_lite.parallel.worker_transport as parallel_transport
import ding_lite.utils
from ding_lite.config import compile_config, read_config_file
from ding_lite.entry.build import probe_env_spec
from ding_lite.entry.parallel import resolve_parallel
from ding_lite.envs import make_vector_env
from ding_lite.parallel.roles import run_collector, run_evaluator
from ding_lite.parallel.worker_transport import WorkerTransport
from ding_lite.utils import POLICY_REGISTRY
from ding_lite.utils.seed import contiguous_seed, derive_seed, env_seeds
from ding_lite.worker.in_process_transport import InProcessTransport

COLLECTORS, ENVS, RESTARTS, STARTS = 64, 8, range(3), (0, 8_000, 10_000, 123_456_789)


class Stop(BaseException):  # not an Exception: a worker turns those from env building into EnvBuildError
    """Raised by a recording stand-in once it has what the test needs."""


def config(collector_num: int = COLLECTORS):
    cfg = compile_config(read_config_file(CARTPOLE), overrides={
        "env.collector_env_num": ENVS, "env.evaluator_env_num": ENVS, "env.n_evaluator_episode": ENVS,
        "parallel.collector_num": collector_num})
    probe_env_spec(cfg, 0)
    resolve_parallel(cfg)
    return cfg


def parallel_seeds(cfg, seed: int, monkeypatch) -> list:
    """(what, env seeds) of every collector's and the evaluator's vector env, for every restart count and resume
    step, and of the final evaluation; ``("process", [seed])`` for each worker's own generators."""
    policy = POLICY_REGISTRY.get("impala")(cfg.policy, enable_field=("learn",))
    transport = WorkerTransport(cfg, seed, policy, [])
    out = []
    for restarts in RESTARTS:
        for role, ranks, starts in (("collector", range(COLLECTORS), STARTS), ("evaluator", [0], [0])):
            for rank in ranks:
                transport.restarts[f"{role}{rank}"] = restarts
                for env_step in starts:
                    spec = transport._spec(role, rank, env_step)
                    out += [(f"{role}{rank} r{restarts} @{env_step}", spec.env_seeds(ENVS)),
                            ("process", [spec.process_seed()])]

    def record(env_cfg, num_envs, seeds, role):
        out.append(("final evaluation", list(seeds)))
        raise Stop

    monkeypatch.setattr(parallel_transport, "make_vector_env", record)
    with pytest.raises(Stop):
        transport.evaluate_now(0)
    return out


def serial_seeds(cfg, seed: int, monkeypatch) -> list:
    """(what, env seeds) of the serial collector and evaluator envs, and of the collector on resumes."""
    out = []
    real = build_module.make_vector_env

    def record(env_cfg, num_envs, seeds=None, role="collector"):
        out.append((role, list(seeds)))
        return real(env_cfg, num_envs, seeds, role=role)

    monkeypatch.setattr(build_module, "make_vector_env", record)
    parts = build_module.build(cfg, seed)
    transport = InProcessTransport(cfg, parts.policy, parts.collector_env, parts.evaluator_env, seed)
    transport.collector.reset = lambda seed: out.append(("resumed collector", list(seed)))
    for env_step in STARTS[1:]:
        transport.launch(env_step, 0, None)
    transport.close()
    return out


def assert_distinct(groups: list) -> None:
    seen = {}
    for what, seeds in groups:
        for i, s in enumerate(seeds):
            assert isinstance(s, int) and 0 <= s < 2 ** 63, (what, s)
            assert s not in seen, f"{what} env {i} has the seed of {seen[s]}"
            seen[s] = f"{what} env {i}"


def test_no_two_envs_of_a_run_share_a_seed(monkeypatch):
    """64 collectors x 8 envs, 3 restart counts x 4 start steps each, the evaluator (3 restart counts), the final
    evaluation and every worker's process seed: all distinct (the old ``seed + 1000 * (rank + 1)`` gave collector 9
    the evaluator's ``seed + 10000``). So are the serial run's collector, evaluator and resumed collectors."""
    cfg = config()
    groups = parallel_seeds(cfg, 0, monkeypatch)
    assert len(groups) == 2 * (COLLECTORS * len(STARTS) + 1) * len(RESTARTS) + 1
    assert sum(len(seeds) for _, seeds in groups) == (COLLECTORS * len(STARTS) + 1) * (ENVS + 1) * len(RESTARTS) + ENVS
    assert_distinct(groups)
    serial = serial_seeds(config(1), 0, monkeypatch)
    assert serial == ([("collector", env_seeds(0, "collector", ENVS)), ("evaluator", env_seeds(0, "evaluator", ENVS))]
                      + [("resumed collector", env_seeds(0, "collector", ENVS, env_step=s)) for s in STARTS[1:]])
    assert_distinct(serial)


@pytest.mark.slow
def test_the_same_config_and_seed_give_the_same_seeds(monkeypatch):
    cfg = config(4)
    first, again = parallel_seeds(cfg, 3, monkeypatch), parallel_seeds(cfg, 3, monkeypatch)
    assert first == again
    other = {s for _, seeds in parallel_seeds(cfg, 4, monkeypatch) for s in seeds}
    assert not other & {s for _, seeds in first for s in seeds}  # another run seed: other seeds throughout
    # In a fresh interpreter with another hash seed too, and pinned: a change of scheme changes every run's streams.
    code = "from ding_lite.utils.seed import env_seeds; print(env_seeds(0, 'collector', 2))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO,
                         env={**os.environ, "PYTHONHASHSEED": "123"}).stdout
    assert out.strip() == str(env_seeds(0, "collector", 2)) == "[3580126411785870160, 6019466350856652188]"


def test_workers_seed_their_envs_and_generators_from_their_spec(monkeypatch):
    """The collector and evaluator roles (run here, in this process) reset their envs with the spec's env seeds
    and seed Python, NumPy and torch with its process seed."""
    cfg = config(2)
    policy = POLICY_REGISTRY.get("impala")(cfg.policy, enable_field=("learn",))
    transport = WorkerTransport(cfg, 5, policy, [])
    transport.restarts["collector1"] = 2
    state = policy.model.state_dict()

    class Endpoint:
        def stopping(self):
            return False

        def poll_weights(self):
            return 0, state

    for spec in (transport._spec("collector", 1, 640), transport._spec("evaluator", 0, 640)):
        got = {}

        def record_seed(seed):
            got["process"] = seed

        def record_env(env_cfg, num_envs, seeds=None, role="collector"):
            got["envs"] = list(seeds)
            raise Stop

        monkeypatch.setattr(ding_lite.utils, "set_seed", record_seed)
        monkeypatch.setattr(ding_lite.envs, "make_vector_env", record_env)
        with pytest.raises(Stop):
            (run_collector if spec.role == "collector" else run_evaluator)(Endpoint(), spec)
        assert got == {"process": derive_seed(5, spec.role, spec.rank, spec.restarts, spec.env_step),
                       "envs": env_seeds(5, spec.role, ENVS, spec.rank, spec.restarts, spec.env_step)}, spec.role
        assert spec.env_step == (640 if spec.role == "collector" else 0)


def test_make_vector_env_seeds_env_i_with_the_ith_seed():
    cfg = config(1)
    seeds = env_seeds(0, "collector", 3)
    venv = make_vector_env(cfg.env, 3, seeds)
    single = gym.make("CartPole-v1")
    for i, s in enumerate(seeds):
        np.testing.assert_array_equal(venv.last_obs[i], single.reset(seed=s)[0])
    venv.close()


def test_envpool_base_seeds_give_equal_or_disjoint_ranges():
    """envpool seeds env i with ``base + i``: bases are multiples of the env count, below 2**31."""
    for n in (1, 3, 8):
        bases = {contiguous_seed(env_seeds(seed, "collector", n, rank=rank)) for seed in range(20)
                 for rank in range(64)}
        assert all(b % n == 0 and 0 <= b <= 2 ** 31 - n for b in bases)
        assert len(bases) == 20 * 64  # distinct here, hence disjoint


def test_bad_keys_are_refused():
    with pytest.raises(ValueError, match="role"):
        derive_seed(0, "learner")
    with pytest.raises(ValueError, match=">= 0"):
        derive_seed(0, "collector", rank=-1)
    assert derive_seed(-1, "collector") != derive_seed(1, "collector")  # negative run seeds work

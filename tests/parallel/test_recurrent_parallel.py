"""The recurrent core end to end outside the serial loop: ``-m parallel`` (local backend: collector and evaluator
processes carry each env's state themselves, since the state lives in the policy's collect and eval modes that
their SampleCollector and Evaluator drive), then ``-m eval`` of its checkpoint, and a serial ``--resume``; and PPO's
core on the Ray backend, in synchronous rounds."""
import os

import pytest

from entry_helpers import read_result

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
# stop_value off: these runs check the mechanics over their whole budgets, not learning
CORE = ["--set", "policy.model.core=lstm", "--set", "policy.model.core_size=16", "--set", "env.stop_value=None"]


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["impala", "acer"])
def test_parallel_eval_and_resume_with_the_core(cli, in_tmp, algo):
    config = os.path.join(REPO, "dizoo_configs", f"cartpole_{algo}.py")
    res = cli("-m", "parallel", "-c", config, "-q", "--env-step", "3000", "--exp-name", "par",
              "--set", "parallel.collector_num=1", *CORE)
    assert res.exit_code == 0, res.output
    result = read_result(in_tmp / "par_seed0")
    assert result["env_step"] >= 3000 and result["train_iter"] > 0, result
    ckpt = in_tmp / "par_seed0" / "ckpt" / "ckpt_last.pth.tar"
    res = cli("-m", "eval", "-c", str(in_tmp / "par_seed0" / "total_config.py"), "--load-path", str(ckpt))
    assert res.exit_code == 0, res.output
    res = cli("-m", "serial", "-c", config, "-q", "--env-step", "1000", "--exp-name", "ser", *CORE)
    assert res.exit_code == 0, res.output
    res = cli("-m", "serial", "-c", config, "-q", "--env-step", "2000", "--exp-name", "ser", "--resume", *CORE)
    assert res.exit_code == 0, res.output
    assert read_result(in_tmp / "ser_seed0")["env_step"] >= 2000


@pytest.mark.ray
def test_ppo_with_the_core_and_normalize_obs_on_ray_trains_on_policy(in_tmp, monkeypatch):
    """PPO's LSTM core with normalize_obs on the Ray backend: its collector actors drive the same SampleCollector
    in synchronous rounds as the local backend's processes (tests/parallel/test_ppo_parallel.py), carrying their
    envs' states across rounds and storing each unroll's initial state; the learner (this process, Ray's driver)
    replays each round from those states with the weights and statistics the actors acted with, so every update's
    one minibatch is on-policy (approximate KL 0, nothing clipped). This covers the core on Ray for every policy:
    IMPALA and ACER act with it through the same SampleCollector (test_parallel_eval_and_resume_with_the_core)."""
    pytest.importorskip("ray", reason="the Ray backend needs the extra: pip install 'ding_lite[ray]'")
    from ding_lite.config import read_config_file
    from ding_lite.entry import parallel_pipeline
    from ding_lite.policy import PPOPolicy

    overrides = {"parallel.backend": "ray", "parallel.collector_num": 2, "env.collector_env_num": 4,
                 "env.evaluator_env_num": 1, "env.n_evaluator_episode": 1, "env.stop_value": None,
                 "policy.model.core": "lstm", "policy.model.core_size": 16, "env.normalize_obs": True,
                 "policy.unroll_len": 16, "policy.learn.epochs": 1, "policy.learn.minibatch_size": 10_000,
                 "policy.learn.clip_ratio": 1e-4, "policy.eval.evaluator.eval_freq": 1000}
    seen = []
    update = PPOPolicy._update

    def spy(self, mb):
        out = update(self, mb)
        seen.append((mb["core_state"].shape, float(out["approx_kl"]), float(out["clip_fraction"])))
        return out

    monkeypatch.setattr(PPOPolicy, "_update", spy)
    rounds = 4  # a round: 2 actors x 4 envs x 16 steps, PPO's collection of 8 unrolls
    result = parallel_pipeline(read_config_file(os.path.join(REPO, "dizoo_configs", "cartpole_ppo.py")), 0,
                               max_env_step=rounds * 8 * 16, overrides=overrides, quiet=True)
    stats = result["parallel"]
    assert stats["backend"] == "ray" and stats["policy_lag"]["max"] == 0 and stats["dropped_stale"] == 0, stats
    assert result["train_iter"] == rounds == len(seen), (result, seen)
    assert all(shape == (8, 4, 16) for shape, _, _ in seen), seen  # 8 unrolls, the actor's and critic's states
    assert all(abs(kl) < 1e-5 and clipped == 0.0 for _, kl, clipped in seen), seen

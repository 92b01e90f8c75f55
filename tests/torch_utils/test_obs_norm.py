"""Observation normalisation: running statistics against a direct computation, the normalising formula, which leaves
are marked, and that only train samples (never acting or evaluation) move the statistics."""
import numpy as np
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.entry.build import probe_env_spec
from ding_lite.policy import IMPALAPolicy
from ding_lite.utils import ConfigError
from ding_lite.torch_utils.obs_norm import ObsNormalizer, make_obs_normalizer, mark_normalized, normalized_leaves


def test_running_statistics_equal_those_of_all_observations_seen():
    g = torch.Generator().manual_seed(0)
    norm = ObsNormalizer([()], [[3]])
    batches = [torch.randn(n, 3, generator=g) * torch.tensor([1.0, 10.0, 0.1]) + 5 for n in (1, 7, 64, 3)]
    batches.append(torch.randn(2, 5, 3, generator=g))  # any leading dims (unrolls: (N, T, ...))
    for b in batches:
        norm.update(b)
    every = np.concatenate([b.reshape(-1, 3).numpy().astype(np.float64) for b in batches])
    np.testing.assert_allclose(norm.mean_0.numpy(), every.mean(0), rtol=1e-12)
    np.testing.assert_allclose(norm.var_0.numpy(), every.var(0), rtol=1e-10)
    assert norm.count.item() == len(every)


def test_normalised_observation_follows_the_formula_and_the_clip():
    norm = ObsNormalizer([("pos",)], [[2]], clip=2.0, epsilon=1e-8)
    norm.update({"pos": torch.tensor([[0.0, 10.0], [2.0, 30.0]])})  # mean (1, 20), var (1, 100)
    obs = {"pos": torch.tensor([[1.5, 25.0], [100.0, 20.0]]), "goal": torch.tensor([3, 4])}
    out = norm(obs)
    expected = torch.tensor([[0.5 / np.sqrt(1 + 1e-8), 5 / np.sqrt(100 + 1e-8)], [2.0, 0.0]], dtype=torch.float32)
    torch.testing.assert_close(out["pos"], expected)
    assert out["pos"].dtype == torch.float32 and out["goal"] is obs["goal"]  # other leaves untouched
    assert torch.equal(obs["pos"], torch.tensor([[1.5, 25.0], [100.0, 20.0]]))  # the input is not changed
    fresh = ObsNormalizer([()], [[2]], clip=None)  # before any update: the identity
    x = torch.tensor([[3.0, -40.0]])
    torch.testing.assert_close(fresh(x), x)


def test_only_float_box_leaves_are_marked():
    space = dict(space="dict", spaces=dict(
        pos=dict(space="box", shape=[2], dtype="float32"), img=dict(space="box", shape=[7, 7, 3], dtype="uint8"),
        goal=dict(space="discrete", n=4, start=0),
        t=dict(space="tuple", spaces={"0": dict(space="box", shape=[3], dtype="float64")})))
    marked = mark_normalized(space, 5.0)
    assert normalized_leaves(marked) == [(("pos",), [2], 5.0), (("t", "0"), [3], 5.0)]
    assert normalized_leaves(space) == [] and make_obs_normalizer(space) is None
    assert make_obs_normalizer(marked).paths == [("pos",), ("t", "0")]


def _policy(normalize=True):
    cfg = compile_config((dict(env=dict(env_id="CartPole-v1", normalize_obs=normalize)),
                          dict(policy=dict(type="impala"))))
    probe_env_spec(cfg, 0)
    return IMPALAPolicy(cfg.policy)


def test_acting_and_evaluating_never_move_the_statistics():
    policy = _policy()
    norm = policy.model.obs_normalizer
    obs = torch.randn(8, 4) * 3 + 1
    policy.collect_mode.forward(obs)
    policy.eval_mode.forward(obs)
    assert norm.count.item() == 0 and torch.equal(norm.mean_0, torch.zeros(4, dtype=torch.float64))
    policy.update_obs_stats({"obs": obs.reshape(2, 4, 4)})
    assert norm.count.item() == 8
    # the model sees normalised inputs: the same logits as the model fed (obs - mean) / std by hand
    expected = policy.model((obs - norm.mean_0.float()) / (norm.var_0.float() + 1e-8).sqrt(), mode="compute_actor")
    torch.testing.assert_close(policy.eval_mode.forward(obs)["logit"], expected["logit"])
    # the statistics are part of the model's state: checkpoints and the workers' weights carry them
    assert {"obs_normalizer.mean_0", "obs_normalizer.var_0", "obs_normalizer.count"} <= set(policy.model.state_dict())
    assert not hasattr(_policy(normalize=False).model, "obs_normalizer")


def test_normalize_obs_on_an_env_without_float_observations_is_refused():
    cfg = compile_config((dict(env=dict(kwargs=dict(size=3)), policy=dict()),
                          dict(env=dict(type="goal_grid"), policy=dict(type="impala"))))
    cfg.env.normalize_obs = True
    cfg.env.wrappers = []
    probe_env_spec(cfg, 0)  # GoalGrid's position is a float Box: accepted
    assert normalized_leaves(cfg.policy.model.obs_space) == [(("position",), [2], 10.0)]
    cfg = compile_config((dict(env=dict(normalize_obs=True), policy=dict()),
                          dict(env=dict(type="moving_dot"), policy=dict(type="impala"))))
    with pytest.raises(ConfigError, match=r"env.normalize_obs=True but env 'moving_dot' has no float Box"):
        probe_env_spec(cfg, 0)

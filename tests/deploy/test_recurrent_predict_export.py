"""A recurrent policy outside training: checkpoints keep the core, ``ding_lite.load(...).predict`` takes and returns
the state, and the TorchScript and ONNX exports take ``core_state`` and return ``next_core_state``, matching
``predict`` step after step (issue 32, item 4): IMPALA, ACER and PPO (issue 47; with observation normalisation, a
Gaussian, MultiDiscrete actions, nested observations and an action mask)."""
import os
import sys

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest
import torch

import ding_lite
from ding_lite.config import compile_config
from ding_lite.deploy.agent import Agent, as_batch, build_acting_policy
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.deploy.export import export_agent, input_names, output_names, DeployModule
from ding_lite.envs import EnvSpec
from ding_lite.torch_utils.tree import tree_map
from ding_lite.utils import UserError

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
BOX4 = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
PIXELS = gym.spaces.Box(0, 255, (1, 36, 36), np.uint8)
BOUNDS = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 3.0], np.float32))
NESTED = gym.spaces.Dict(goal=gym.spaces.Discrete(25), agent=gym.spaces.Dict(
    position=gym.spaces.Box(0.0, 1.0, (2,), np.float32), walls=gym.spaces.MultiBinary(4)))
MASKED = gym.spaces.Dict(position=gym.spaces.Discrete(25), action_mask=gym.spaces.MultiBinary(4))  # WallGrid's
SMALL = dict(encoder_hidden_size_list=[16], actor_head_hidden_size=16, critic_head_hidden_size=16, core="lstm",
             core_size=8)
CASES = {
    "impala_discrete": ("impala", BOX4, gym.spaces.Discrete(3), dict(SMALL)),
    "impala_separate_continuous": ("impala", BOX4, BOUNDS, dict(SMALL, share_encoder=False)),
    "impala_conv": ("impala", PIXELS, gym.spaces.Discrete(3), dict(actor_head_hidden_size=16, core="lstm",
                                                                   core_size=8)),
    "acer_discrete": ("acer", BOX4, gym.spaces.Discrete(3), dict(SMALL)),
    "ppo_normalized": ("ppo", BOX4, gym.spaces.Discrete(3), dict(SMALL)),
    "ppo_separate_continuous": ("ppo", BOX4, BOUNDS, dict(SMALL, share_encoder=False)),
    "ppo_nested": ("ppo", NESTED, gym.spaces.Discrete(4), dict(SMALL)),
    "ppo_multi_discrete": ("ppo", BOX4, gym.spaces.MultiDiscrete([3, 2]), dict(SMALL)),
    "ppo_masked": ("ppo", MASKED, gym.spaces.Discrete(4), dict(SMALL)),
}


def make_agent(name):
    policy_type, obs_space, action_space, model = CASES[name]
    env = dict(env_id="CartPole-v1", normalize_obs=name.endswith("normalized"))
    if name.endswith("masked"):
        env["action_mask_key"] = "action_mask"
    cfg = compile_config((dict(env=env, policy=dict(model=model)), dict(policy=dict(type=policy_type))))
    spec = EnvSpec.from_spaces(obs_space, action_space)
    resolve_env_spaces(cfg, spec)
    torch.manual_seed(0)
    agent = Agent.from_policy(build_acting_policy(cfg.policy), spec, cfg)
    with torch.no_grad():
        for p in agent.policy.model.parameters():
            p.mul_(3)
    if name.endswith("normalized"):
        agent.policy.update_obs_stats({"obs": torch.randn(500, 4) * 3 + 1})
    return agent, obs_space


def sequence(space, steps=6, n=3):
    """``steps`` batches of ``n`` observations of ``space`` (nested: dicts of arrays); an action mask keeps at least
    one valid action per row."""
    batch = gym.vector.utils.batch_space(space, n)
    batch.seed(1)
    out = [batch.sample() for _ in range(steps)]
    for obs in out:
        if isinstance(obs, dict) and "action_mask" in obs:
            obs["action_mask"][np.arange(n), np.arange(n) % 4] = 1
    return out


def as_tensors(obs):
    return tree_map(torch.as_tensor, obs) if isinstance(obs, dict) else torch.as_tensor(obs)


def export_inputs(agent, obs):
    """The export's inputs for ``obs`` (a batch): the observation leaves, then the action mask (if any)."""
    leaves = as_batch(obs, agent.obs_space)[0]
    if isinstance(obs, dict) and "action_mask" in obs:
        leaves.append(obs["action_mask"].astype(np.int8))
    return leaves


@pytest.mark.parametrize("name", sorted(CASES))
def test_predict_carries_the_state_like_the_eval_mode(name):
    agent, space = make_agent(name)
    assert agent.recurrent and agent.initial_state().shape == agent.state_shape
    obs_seq = sequence(space)
    policy = agent.policy
    policy.eval_mode.reset(None)
    state = None
    for obs in obs_seq:  # a batch of 3 envs: predict with an explicit state == the eval mode's carried state
        sampled, sampled_state = agent.predict(obs, deterministic=False, state=state)  # the collect mode's step
        action, state = agent.predict(obs, state=state)
        np.testing.assert_allclose(sampled_state, state, rtol=0, atol=0)  # the next state does not depend on a_t
        if name.endswith("masked"):
            assert obs["action_mask"][np.arange(3), action].all() and obs["action_mask"][np.arange(3), sampled].all()
        carried = policy.eval_mode.forward(as_tensors(obs))
        np.testing.assert_array_equal(action, agent._env_action(carried["action"], False))
        np.testing.assert_allclose(state, policy._eval_state.numpy(), rtol=0, atol=0)  # what the mode carries now
    row = lambda obs, i: tree_map(lambda x: x[i], obs) if isinstance(obs, dict) else obs[i]  # noqa: E731
    single, s1 = agent.predict(row(obs_seq[0], 1))  # one observation: state (*state_shape)
    assert s1.shape == agent.state_shape
    _, again = agent.predict(row(obs_seq[1], 1), state=s1)
    _, batched = agent.predict(obs_seq[1], state=np.stack([s1] * 3))
    np.testing.assert_allclose(again, batched[1], rtol=1e-4, atol=1e-5)  # batch-size rounding only
    with pytest.raises(UserError, match="recurrent state is"):
        agent.predict(obs_seq[0], state=np.zeros((2, *agent.state_shape), np.float32))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("fmt", ["torchscript", "onnx"])
def test_export_takes_and_returns_the_state(name, fmt, tmp_path):
    agent, space = make_agent(name)
    path = export_agent(agent, fmt, str(tmp_path / f"policy.{fmt}"))
    module = DeployModule(agent)
    names = input_names(agent.obs_space) + (["action_mask"] if name.endswith("masked") else []) + ["core_state"]
    assert output_names(module)[-1] == "next_core_state"
    if fmt == "torchscript":
        loaded = torch.jit.load(path)

        def run(obs, state):
            with torch.no_grad():
                out = loaded(*[torch.as_tensor(x) for x in export_inputs(agent, obs)], torch.as_tensor(state))
            return [o.numpy() for o in out]
    else:
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        assert [i.name for i in session.get_inputs()] == names

        def run(obs, state):
            return session.run(None, dict(zip(names, export_inputs(agent, obs) + [state])))
    state = np.zeros((3, *agent.state_shape), np.float32)
    pstate = None
    for obs in sequence(space):
        action, state = (lambda out: (out[0], out[-1]))(run(obs, state))
        want, pstate = agent.predict(obs, state=pstate)
        np.testing.assert_allclose(action, want, rtol=1e-5, atol=1e-5)
        # float32 sums in another order: the conv LSTM's state drifts 1.2e-5 from predict's over the sequence where
        # torch has several threads (pytest without -n), within 1e-5 with one (pytest-xdist's workers)
        np.testing.assert_allclose(state, pstate, rtol=1e-4, atol=1e-4)


def test_feed_forward_predict_refuses_a_state():
    cfg = compile_config((dict(env=dict(env_id="CartPole-v1")), dict(policy=dict(type="impala"))))
    spec = EnvSpec.from_spaces(BOX4, gym.spaces.Discrete(2))
    resolve_env_spaces(cfg, spec)
    agent = Agent.from_policy(build_acting_policy(cfg.policy), spec, cfg)
    assert not agent.recurrent and agent.state_shape is None
    with pytest.raises(UserError, match="feed-forward"):
        agent.predict(np.zeros(4, np.float32), state=np.zeros((2, 8), np.float32))


def test_trained_checkpoint_loads_and_plays_an_episode(in_tmp):
    """A short serial run with the core: the checkpoint holds the LSTM's weights, load() rebuilds it, and an episode
    played with predict (state carried, reset by the caller) equals one played by the eval mode."""
    sys.path.insert(0, os.path.join(REPO, "dizoo_configs"))
    import cartpole_impala

    from ding_lite.entry import serial_pipeline

    policy = serial_pipeline((cartpole_impala.main_config, cartpole_impala.create_config), seed=0,
                             max_env_step=600, overrides={"policy.model.core": "lstm", "policy.model.core_size": 16},
                             exp_name="rec", quiet=True)
    agent = ding_lite.load("rec_seed0/ckpt/ckpt_last.pth.tar")
    assert agent.recurrent and agent.state_shape == (4, 16)  # share_encoder=False: the critic's core too
    for k, v in policy.model.state_dict().items():
        torch.testing.assert_close(agent.policy.model.state_dict()[k], v)
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=5)
    state, actions = None, []
    agent.policy.eval_mode.reset(None)
    for _ in range(50):
        action, state = agent.predict(obs, state=state)
        carried = agent.policy.eval_mode.forward(torch.as_tensor(obs[None]))["action"][0]
        assert int(action) == int(carried)
        actions.append(int(action))
        obs, _, term, trunc, _ = env.step(action)
        if term or trunc:
            break
    env.close()


def test_checkpoint_meta_of_a_feed_forward_model_is_unchanged_and_a_core_mismatch_is_refused():
    """Feed-forward checkpoints record the model as before the core existed (older checkpoints still load); an LSTM
    checkpoint under a feed-forward config (or the reverse) is refused, naming policy.model.core."""
    from ding_lite.run.checkpoint import check_checkpoint_fits, checkpoint_meta

    def model_cfg(**core):
        cfg = compile_config((dict(env=dict(env_id="CartPole-v1"), policy=dict(model=core)),
                              dict(policy=dict(type="impala"))))
        return cfg.policy.model
    feed_forward, lstm = model_cfg(), model_cfg(core="lstm", core_size=8)
    assert "core" not in checkpoint_meta("impala", feed_forward)["model"]
    assert checkpoint_meta("impala", lstm)["model"]["core"] == "lstm"
    check_checkpoint_fits({"meta": checkpoint_meta("impala", feed_forward)}, "impala", feed_forward, "ff.pth.tar")
    with pytest.raises(UserError, match=r"policy\.model\.core: checkpoint 'lstm', config None"):
        check_checkpoint_fits({"meta": checkpoint_meta("impala", lstm)}, "impala", feed_forward, "lstm.pth.tar")
    with pytest.raises(UserError, match=r"policy\.model\.core: checkpoint None, config 'lstm'; "
                                        r"policy\.model\.core_size: checkpoint not set, config 8"):
        check_checkpoint_fits({"meta": checkpoint_meta("impala", feed_forward)}, "impala", lstm, "ff.pth.tar")

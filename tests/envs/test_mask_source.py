"""``env.action_mask_from``: masks from ``env.action_masks()`` and ``info['action_mask']`` moved into the observation
(``ding_lite/envs/mask_source.py``), on small real envs, and a short IMPALA run that never takes an invalid action."""
import json

import gymnasium as gym
import numpy as np
import pytest

from mask_method_env import MaskedPick

from ding_lite.config import compile_config
from ding_lite.entry import serial_pipeline
from ding_lite.envs import make_vector_env
from ding_lite.envs.mask_source import MaskFromEnv
from ding_lite.utils import ConfigError, UserError


class Heads(gym.Env):
    """MultiDiscrete([2, 3]) with a Dict observation; one mask per head from ``action_masks()``."""

    def __init__(self, masks=((True, False), (False, True, True))):
        self.masks = masks
        self.observation_space = gym.spaces.Dict({"x": gym.spaces.Box(-1.0, 1.0, (2,), np.float32)})
        self.action_space = gym.spaces.MultiDiscrete([2, 3])

    def action_masks(self):
        return tuple(np.array(m) for m in self.masks)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return {"x": np.zeros(2, np.float32)}, {}

    def step(self, action):
        return {"x": np.ones(2, np.float32)}, 0.0, False, False, {}


class InfoMask(gym.Env):
    """Discrete(3), a plain Discrete observation, the mask in ``info`` (``mask`` given, or no key when None);
    ``ends_at``: the step that terminates."""

    def __init__(self, mask=(1, 0, 1), ends_at=3):
        self.mask, self.ends_at = mask, ends_at
        self.observation_space = gym.spaces.Discrete(5)
        self.action_space = gym.spaces.Discrete(3)

    def _info(self, done=False):
        return {} if self.mask is None or done else {"action_mask": np.asarray(self.mask)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return 0, self._info()

    def step(self, action):
        self.t += 1
        done = self.t >= self.ends_at
        return self.t, 1.0, done, False, self._info(done)


def test_method_mask_joins_a_plain_observation(tmp_path):
    env = MaskFromEnv(MaskedPick(str(tmp_path / "invalid")), "method", env_name="masked_pick")
    assert env.observation_space == gym.spaces.Dict({"observation": gym.spaces.Box(0.0, 1.0, (4,), np.float32),
                                                     "action_mask": gym.spaces.MultiBinary(4)})
    obs, _ = env.reset(seed=3)
    for _ in range(5):
        assert env.observation_space.contains(obs)
        assert obs["action_mask"].dtype == np.int8 and obs["action_mask"].sum() == 2
        np.testing.assert_array_equal(obs["action_mask"], env.unwrapped.action_masks())
        np.testing.assert_array_equal(obs["observation"], obs["action_mask"])  # MaskedPick shows its mask
        obs, *_ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))


def test_info_mask_and_the_final_observation():
    env = MaskFromEnv(InfoMask(), "info", key="legal", env_name="info_mask")
    obs, info = env.reset()
    assert obs["observation"] == 0 and obs["legal"].tolist() == [1, 0, 1] and env.observation_space.contains(obs)
    assert "action_mask" in info  # the info is passed on as it was
    for _ in range(2):
        obs, _, terminated, _, _ = env.step(0)
        assert not terminated and obs["legal"].tolist() == [1, 0, 1]
    obs, _, terminated, _, _ = env.step(0)  # the end: info has no mask there, so no action is valid
    assert terminated and obs["legal"].tolist() == [0, 0, 0] and env.observation_space.contains(obs)


def test_multi_discrete_heads_are_concatenated_into_a_dict_observation():
    env = MaskFromEnv(Heads(), "method")
    assert set(env.observation_space.spaces) == {"x", "action_mask"}
    assert env.observation_space["action_mask"] == gym.spaces.MultiBinary(5)
    obs, _ = env.reset()
    assert obs["action_mask"].tolist() == [1, 0, 0, 1, 1] and env.observation_space.contains(obs)


@pytest.mark.parametrize("make, source, message", [
    (lambda: InfoMask(), "method",
     "env 'info_mask' has no method action_masks(), which env.action_mask_from='method' calls; add one"),
    (lambda: InfoMask(mask=None), "info",
     "env 'info_mask' gave no info['action_mask'] after reset (env.action_mask_from='info'); return the mask"),
    (lambda: InfoMask(mask=(1, 1)), "info",
     "env 'info_mask': the action mask from info['action_mask'] after reset: it has shape (2,); the action space "
     "Discrete(3) takes (3,); give one entry per action"),
    (lambda: InfoMask(mask=(0.0, 0.5, 1.0)), "info",
     "env 'info_mask': the action mask from info['action_mask'] after reset is float64 with values [0.0, 0.5, 1.0], "
     "not bools or 0/1; return a bool"),
    (lambda: Heads(masks=((1, 0), (1, 1))), "method",
     "env 'info_mask': the action mask from env.action_masks() after reset: head 1 has shape (2,), its action size "
     "is 3"),
    (lambda: gym.make("Pendulum-v1"), "method",
     "env 'info_mask': env.action_mask_from='method' but the action space Box(-2.0, 2.0, (1,), float32) takes no "
     "mask"),
])
def test_a_missing_or_malformed_mask_is_one_line_naming_the_env_and_the_fix(make, source, message):
    with pytest.raises(UserError) as err:
        MaskFromEnv(make(), source, env_name="info_mask").reset()
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_method_that_raises_before_the_end_is_not_hidden():
    class Raises(InfoMask):
        def action_masks(self):
            raise RuntimeError("no mask today")
    with pytest.raises(RuntimeError, match="no mask today"):
        MaskFromEnv(Raises(), "method").reset()


def test_a_dict_observation_that_has_the_key_already_is_refused():
    env = gym.wrappers.TransformObservation(
        Heads(), lambda o: {**o, "action_mask": np.ones(5, np.int8)},
        gym.spaces.Dict({"x": gym.spaces.Box(-1.0, 1.0, (2,), np.float32), "action_mask": gym.spaces.MultiBinary(5)}))
    with pytest.raises(UserError, match="already has the key 'action_mask'.*set env.action_mask_from='obs'"):
        MaskFromEnv(env, "method", env_name="heads")


def _env_config(tmp_path, **env):
    main = dict(env=dict(kwargs=dict(invalid_log=str(tmp_path / "invalid")), collector_env_num=2, **env))
    return compile_config((main, dict(env=dict(type="masked_pick", import_names=["mask_method_env"]),
                                      policy=dict(type="impala"))))


@pytest.mark.parametrize("via", ["method", "info"])
def test_the_vector_envs_of_a_run_carry_the_mask(tmp_path, via):
    cfg = _env_config(tmp_path, action_mask_from=via, action_mask_key="legal")
    cfg.env.kwargs.via = via
    venv = make_vector_env(cfg.env, 2, seed=0)
    try:
        assert set(venv.single_observation_space.spaces) == {"observation", "legal"}
        assert venv.last_obs["legal"].shape == (2, 4) and (venv.last_obs["legal"].sum(1) == 2).all()
    finally:
        venv.close()


@pytest.mark.parametrize("env, message", [
    (dict(action_mask_from="method_"), "env.action_mask_from='method_': must be one of obs, method, info"),
    (dict(action_mask_from="info", action_mask_key=""), "env.action_mask_from='info' puts the mask into the "
                                                        "observation under env.action_mask_key, which is empty"),
])
def test_config_errors(tmp_path, env, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _env_config(tmp_path, **env)


@pytest.mark.slow
@pytest.mark.parametrize("via", ["method", "info"])
def test_impala_never_takes_an_invalid_action(tmp_path, monkeypatch, via):
    """A short serial IMPALA run (collection and evaluation): MaskedPick logs and raises on any invalid action, and a
    random policy would take one on half its steps."""
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "invalid"
    main = dict(exp_name="pick", torch_threads=1,
                env=dict(kwargs=dict(invalid_log=str(log), via=via), collector_env_num=4, evaluator_env_num=1,
                         n_evaluator_episode=1, action_mask_from=via),
                policy=dict(unroll_len=8, learn=dict(batch_size=8), collect=dict(n_sample=4),
                            eval=dict(evaluator=dict(eval_freq=10))))
    create = dict(env=dict(type="masked_pick", import_names=["mask_method_env"]), policy=dict(type="impala"))
    serial_pipeline((main, create), seed=0, max_env_step=1500, quiet=True)
    assert not log.exists(), log.read_text()
    with open(tmp_path / "pick_seed0" / "result.json") as f:
        result = json.load(f)
    assert result["env_step"] >= 1500 and result["train_iter"] > 0
    assert result["best_return"] == 20.0  # every step of the evaluation episode valid

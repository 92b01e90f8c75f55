"""The collector and the evaluator stop at the first NaN or infinite observation or reward, naming the env id, the env
index and the env step; a real CartPole-v1 (``nonfinite_env``) returns the bad value at a chosen step of one env."""
import functools

import gymnasium as gym
import numpy as np
import pytest
import torch
from easydict import EasyDict
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

import ding_lite.model  # noqa: F401  (registers 'vac')
from ding_lite.entry import serial_pipeline
from ding_lite.entry.build import resolve_env_spaces
from ding_lite.envs import EnvConfig, EnvSpec, make_vector_env
from ding_lite.policy import IMPALAPolicy
from ding_lite.utils import NonFiniteError
from ding_lite.utils.seed import env_seeds
from ding_lite.worker import Evaluator, SampleCollector
from ding_lite.envs.finite_check import FIX, all_finite, env_name
from nonfinite_env import ENV_TYPE

N_ENV, SEED, BAD_INDEX = 4, 10, 2
TIME_LIMIT = 5  # CartPole cannot fall within 5 steps, so every episode is truncated after exactly 5


def env_cfg(in_seed: int = SEED + BAD_INDEX, **kwargs) -> EasyDict:
    """The env section of a CartPole whose env at index ``in_seed - SEED`` returns what ``kwargs`` say."""
    cfg = EnvConfig.default_config()
    cfg.update(type=ENV_TYPE, kwargs=dict(in_seed=in_seed, time_limit=TIME_LIMIT, **kwargs), manager=dict(type="base"))
    return cfg


def make_policy(venv: gym.vector.VectorEnv, cfg: EasyDict) -> IMPALAPolicy:
    pol = IMPALAPolicy.default_config()
    pol.unroll_len = 4
    pol.model = EasyDict(type=None, import_names=[], obs_shape=None, action_shape=None, action_space=None,
                         encoder_hidden_size_list=[8])
    full = EasyDict(env=cfg, policy=pol)
    resolve_env_spaces(full, EnvSpec.from_spaces(venv.single_observation_space, venv.single_action_space))
    torch.manual_seed(0)
    return IMPALAPolicy(full.policy, enable_field=("collect", "eval"))


# what the env returns, at which of its steps (or resets), the vector step that must fail, and the message part
CASES = {
    "nan obs": (dict(what="obs", at=3), 3, "non-finite obs", "obs element 1 is nan"),
    "-inf obs": (dict(what="obs", at=7, value=-np.inf), 7, "non-finite obs", "obs element 1 is -inf"),
    "inf reward": (dict(what="reward", at=3, value=np.inf), 3, "non-finite reward", "reward is inf"),
    "nan reward": (dict(what="reward", at=6), 6, "non-finite reward", "reward is nan"),
    "nan final obs": (dict(what="final_obs", at=6), 2 * TIME_LIMIT, "non-finite final obs", "element 1 is nan"),
    "nan obs after an autoreset": (dict(what="reset_obs", at=2), TIME_LIMIT, "non-finite obs",
                                   "(the first obs of a new episode, after an autoreset)"),
}


@pytest.mark.parametrize("kwargs, fail_step, head, detail", list(CASES.values()), ids=list(CASES))
def test_collector_names_env_index_and_step(kwargs, fail_step, head, detail):
    cfg = env_cfg(**kwargs)
    venv = make_vector_env(cfg, N_ENV, seed=SEED)
    collector = SampleCollector(venv, make_policy(venv, cfg).collect_mode)
    try:
        for _ in range(fail_step - 1):  # clean steps pass
            collector.step()
        with pytest.raises(NonFiniteError) as info:
            collector.step()
    finally:
        collector.close()
    message = str(info.value)
    assert message.startswith(f"{head} from env 'CartPole-v1' (env index {BAD_INDEX} of {N_ENV}) at collector env "
                              f"step {fail_step * N_ENV}: "), message
    assert detail in message and message.endswith(FIX)


def test_collector_error_message():
    cfg = env_cfg(what="obs", at=3)
    venv = make_vector_env(cfg, N_ENV, seed=SEED)
    collector = SampleCollector(venv, make_policy(venv, cfg).collect_mode)
    collector.step(), collector.step()
    with pytest.raises(NonFiniteError) as info:
        collector.step()
    collector.close()
    message = str(info.value)
    assert message == (f"non-finite obs from env 'CartPole-v1' (env index {BAD_INDEX} of {N_ENV}) at collector env "
                       f"step {3 * N_ENV}: obs element 1 is nan; {FIX}")
    assert "\n" not in message and collector.envstep == 3 * N_ENV


def test_collector_checks_the_first_reset():
    cfg = env_cfg(what="reset_obs", at=1, value=np.inf)
    venv = make_vector_env(cfg, N_ENV, seed=SEED)
    with pytest.raises(NonFiniteError, match=rf"non-finite reset obs from env 'CartPole-v1' \(env index "
                                             rf"{BAD_INDEX} of {N_ENV}\) at collector env step 0: reset obs "
                                             rf"element 1 is inf"):
        SampleCollector(venv, make_policy(venv, env_cfg()).collect_mode)
    venv.close()


def test_evaluator_names_env_index_step_and_train_iter():
    cfg = env_cfg(what="reward", at=4, value=-np.inf, in_seed=SEED + 1)
    venv = make_vector_env(cfg, N_ENV, seed=SEED)
    evaluator = Evaluator(venv, make_policy(venv, cfg).eval_mode, n_episode=N_ENV, eval_freq=1)
    with pytest.raises(NonFiniteError) as info:
        evaluator.eval(train_iter=7)
    evaluator.close()
    assert str(info.value) == (f"non-finite reward from env 'CartPole-v1' (env index 1 of {N_ENV}) at evaluator env "
                               f"step {4 * N_ENV} of the evaluation at train_iter 7: reward is -inf; {FIX}")


def test_clean_env_passes():
    cfg = env_cfg(what="obs", at=3, in_seed=-1)  # armed in no env
    venv = make_vector_env(cfg, N_ENV, seed=SEED)
    policy = make_policy(venv, cfg)
    collector = SampleCollector(venv, policy.collect_mode)
    collector.collect(8 * N_ENV)  # several autoresets (every 5 steps)
    collector.close()
    evaluator = Evaluator(make_vector_env(cfg, N_ENV, seed=SEED), policy.eval_mode, n_episode=N_ENV, eval_freq=1)
    assert evaluator.eval(train_iter=0)["episodes"] == N_ENV
    evaluator.close()


def test_all_finite_skips_integer_arrays():
    assert all_finite(np.full((2, 3), 255, dtype=np.uint8)) and all_finite(np.ones(2, dtype=bool))
    assert all_finite(np.zeros((2, 3), dtype=np.float32))
    for bad in (np.nan, np.inf, -np.inf):
        assert not all_finite(np.array([[0.0, bad]], dtype=np.float32))


class NoSpecEnv(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)


def test_env_name_fallbacks():
    cartpole = functools.partial(gym.make, "CartPole-v1")
    venv = SyncVectorEnv([cartpole], autoreset_mode=AutoresetMode.SAME_STEP)
    assert env_name(venv) == "CartPole-v1"
    venv = SyncVectorEnv([NoSpecEnv], autoreset_mode=AutoresetMode.SAME_STEP)
    assert env_name(venv) == "NoSpecEnv"
    venv.env_name = "my_env"  # what make_vector_env attaches: the config's env id or ENV_REGISTRY type
    assert env_name(venv) == "my_env"
    venv = AsyncVectorEnv([cartpole], autoreset_mode=AutoresetMode.SAME_STEP, context="fork")
    try:
        assert env_name(venv) == "CartPole-v1"  # asked from the env process
    finally:
        venv.close()


def test_serial_pipeline_stops_with_non_finite_error(in_tmp):
    first_env = env_seeds(0, "collector", 2)[0]  # the seed of the serial collector's env 0
    main = dict(exp_name="nonfinite", env=dict(kwargs=dict(what="obs", at=50, in_seed=first_env), collector_env_num=2,
                                              evaluator_env_num=1, n_evaluator_episode=1),
                policy=dict(cuda=False))
    create = dict(env=dict(type=ENV_TYPE), policy=dict(type="impala"))
    with pytest.raises(NonFiniteError) as info:
        serial_pipeline((main, create), seed=0, max_env_step=2000, quiet=True)
    assert str(info.value).startswith("non-finite obs from env 'CartPole-v1' (env index 0 of 2) at collector env "
                                      "step 100: obs element 1 is nan; the env returned NaN/inf")

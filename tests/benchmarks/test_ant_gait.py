"""benchmarks/studies/ant_gait.py: the torso's facing against MuJoCo's own rotation matrix, and an episode's reward
parts adding up to its return (a real Ant-v5 and a real, briefly trained ding_lite checkpoint)."""
import os
import sys

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
import gymnasium as gym  # noqa: E402

import ding_lite  # noqa: E402
from ding_lite.config import read_config_file  # noqa: E402
from ding_lite.entry import serial_pipeline  # noqa: E402
from ding_lite.envs.gym_env import env_factory  # noqa: E402

REPO = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)
sys.path.insert(0, os.path.join(REPO, "benchmarks", "studies"))
import ant_gait  # noqa: E402


def test_up_z_is_the_simulators_torso_z_axis():
    """up_z from the free joint's quaternion equals the world z of the torso's own z axis in MuJoCo's rotation
    matrix (xmat), upright, tipped and on its back."""
    env = gym.make("Ant-v5")
    env.reset(seed=0)
    model, data = env.unwrapped.model, env.unwrapped.data
    torso = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "torso")
    seen = []
    for quat in ([1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [np.cos(0.6), np.sin(0.6), 0, 0],
                 [0.5, 0.5, -0.5, 0.5], [0.9, 0.1, 0.3, -0.2]):
        data.qpos[3:7] = np.asarray(quat) / np.linalg.norm(quat)
        mujoco.mj_forward(model, data)
        seen.append(ant_gait.up_z(data.qpos))
        assert seen[-1] == pytest.approx(data.xmat[torso][8], abs=1e-9)
    assert seen[0] == pytest.approx(1.0) and seen[1] == pytest.approx(-1.0) and seen[2] == pytest.approx(-1.0)
    env.close()


def test_the_parts_add_up_to_the_return(tmp_path):
    """One episode of a checkpoint: survive + forward + ctrl + contact is the return, the ending is named, the
    share on its back is a share."""
    exp = str(tmp_path / "ant")
    small = {"env.evaluator_env_num": 1, "env.n_evaluator_episode": 1, "env.max_episode_steps": 60,
             "policy.random_collect_size": 40, "policy.learn.batch_size": 16}
    serial_pipeline(read_config_file(os.path.join(REPO, "dizoo_configs", "ant_sac.py")), seed=0, max_env_step=60,
                    quiet=True, exp_name=exp, overrides=small)
    agent = ding_lite.load(os.path.join(exp + "_seed0", "ckpt", "ckpt_last.pth.tar"))
    episode = ant_gait.play(agent, env_factory(agent.config.env, "evaluator"), seed=1000)
    parts = sum(episode[part] for part in ant_gait.PARTS)
    assert episode["return"] == pytest.approx(parts, rel=1e-6, abs=1e-6)
    # 1 per healthy step (Ant's default); v5 pays none for the step that leaves the healthy range
    assert episode["reward_survive"] == pytest.approx(episode["length"] - (episode["ended"] != "time limit"))
    assert 1 <= episode["length"] <= 60 and 0.0 <= episode["on_back"] <= 1.0
    assert episode["ended"] in ("time limit", "too high", "too low")
    assert (episode["ended"] == "time limit") == (episode["length"] == 60)

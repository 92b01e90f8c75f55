"""CartPole with the velocities hidden: a task that needs memory (``env.wrappers``).

``HideVelocity`` keeps the cart position and the pole angle of CartPole's observation (x, x_dot, theta, theta_dot)
and drops both velocities, so a feed-forward policy sees positions only and must guess where things are going; a
recurrent one (``policy.model.core='lstm'``) can difference successive positions. Used by the memory test of the
recurrent core (tests/learning/test_recurrent_memory.py, docs/recurrent.md)::

    env=dict(env_id="CartPole-v1", wrappers=["ding_lite.envs.toy.masked_cartpole:HideVelocity"])
"""
import gymnasium as gym
import numpy as np

KEEP = (0, 2)  # x, theta


class HideVelocity(gym.ObservationWrapper):
    """CartPole's observation without x_dot and theta_dot: a Box of shape (2,)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box) or space.shape != (4,):
            raise ValueError(f"HideVelocity wraps CartPole (a Box of shape (4,)), got {space}")
        keep = list(KEEP)
        self.observation_space = gym.spaces.Box(space.low[keep], space.high[keep], dtype=space.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[list(KEEP)]

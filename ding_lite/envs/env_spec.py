"""What the rest of the library needs to know about an env: its spaces, reduced to shapes and an action-space type."""
from dataclasses import dataclass
from typing import Optional, Tuple

import gymnasium as gym
import numpy as np


@dataclass(frozen=True)
class EnvSpec:
    """Observation/action shapes of one (single, not vectorised) env, and how actions are represented.

    ``action_space_type`` is 'discrete', 'continuous' or 'multi_discrete'; ``action_shape`` is the number of actions
    (discrete), the action dimension (continuous) or the number of heads (multi_discrete, with sizes in ``nvec``).
    """

    obs_shape: Tuple[int, ...]
    action_space_type: str
    action_shape: int
    nvec: Optional[Tuple[int, ...]] = None
    action_low: Optional[np.ndarray] = None
    action_high: Optional[np.ndarray] = None

    @classmethod
    def from_spaces(cls, observation_space: gym.Space, action_space: gym.Space) -> "EnvSpec":
        if not isinstance(observation_space, gym.spaces.Box):
            raise TypeError(f"ding_lite supports Box observation spaces, got {observation_space}")
        obs_shape = tuple(int(d) for d in observation_space.shape)
        if isinstance(action_space, gym.spaces.Discrete):
            return cls(obs_shape, "discrete", int(action_space.n))
        if isinstance(action_space, gym.spaces.MultiDiscrete):
            nvec = tuple(int(n) for n in np.asarray(action_space.nvec).reshape(-1))
            return cls(obs_shape, "multi_discrete", len(nvec), nvec=nvec)
        if isinstance(action_space, gym.spaces.Box):
            return cls(obs_shape, "continuous", int(np.prod(action_space.shape)),
                       action_low=action_space.low.astype(np.float32), action_high=action_space.high.astype(np.float32))
        raise TypeError(f"unsupported action space {action_space}: use Discrete, MultiDiscrete or Box")

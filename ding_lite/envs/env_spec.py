"""What the rest of the library needs to know about an env: its spaces, reduced to shapes and an action-space type."""
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import gymnasium as gym
import numpy as np

from ding_lite.utils.errors import UserError

from .obs_space import describe_obs_space, obs_shape_of


@dataclass(frozen=True)
class EnvSpec:
    """Observation/action shapes of one (single, not vectorised) env, and how actions are represented.

    ``action_space_type`` is 'discrete', 'continuous', 'multi_discrete' or 'mixed'; ``action_shape`` is the number of
    actions (discrete), the action dimension (continuous and mixed) or the number of heads (multi_discrete, with sizes
    in ``nvec``). A 'mixed' space is gymnasium's ``Tuple(Discrete(K), Box(D))`` with K in ``n_discrete``.
    """

    obs_shape: Any
    action_space_type: str
    action_shape: int
    nvec: Optional[Tuple[int, ...]] = None
    action_low: Optional[np.ndarray] = None
    action_high: Optional[np.ndarray] = None
    n_discrete: Optional[int] = None
    obs_space: Optional[dict] = None

    @property
    def model_action_shape(self):
        """The ``action_shape`` models take: int, the heads' sizes (multi_discrete) or ``[K, D]`` (mixed)."""
        if self.action_space_type == "multi_discrete":
            return list(self.nvec)
        if self.action_space_type == "mixed":
            return [self.n_discrete, self.action_shape]
        return self.action_shape

    @classmethod
    def from_spaces(cls, observation_space: gym.Space, action_space: gym.Space) -> "EnvSpec":
        """The spec of an env with these spaces; an unsupported observation space is a UserError naming its key
        paths (``ding_lite.envs.obs_space``), an unsupported action space a TypeError."""
        obs_space = describe_obs_space(observation_space)
        obs = dict(obs_shape=obs_shape_of(obs_space), obs_space=obs_space)
        if isinstance(action_space, gym.spaces.Discrete):
            return cls(action_space_type="discrete", action_shape=int(action_space.n), **obs)
        if isinstance(action_space, gym.spaces.MultiDiscrete):
            nvec = tuple(int(n) for n in np.asarray(action_space.nvec).reshape(-1))
            return cls(action_space_type="multi_discrete", action_shape=len(nvec), nvec=nvec, **obs)
        if isinstance(action_space, gym.spaces.Box):
            return cls(action_space_type="continuous", action_shape=int(np.prod(action_space.shape)),
                       action_low=action_space.low.astype(np.float32), action_high=action_space.high.astype(np.float32),
                       **obs)
        if (isinstance(action_space, gym.spaces.Tuple) and len(action_space) == 2
                and isinstance(action_space[0], gym.spaces.Discrete) and isinstance(action_space[1], gym.spaces.Box)):
            box = action_space[1]
            return cls(action_space_type="mixed", action_shape=int(np.prod(box.shape)),
                       action_low=box.low.astype(np.float32), action_high=box.high.astype(np.float32),
                       n_discrete=int(action_space[0].n), **obs)
        raise TypeError(f"unsupported action space {action_space}: use Discrete, MultiDiscrete, Box or "
                        f"Tuple(Discrete, Box)")


def action_space_record(spec: EnvSpec) -> dict:
    """The action space of ``spec`` as plain data (lists and numbers), for a checkpoint's ``meta['env']``: what
    ``ding_lite.load`` needs to act in env units without building an env (``spec_from_record``)."""
    def plain(x):
        return None if x is None else [float(v) for v in np.asarray(x).reshape(-1)]
    return dict(action_space_type=spec.action_space_type, action_shape=int(spec.action_shape),
                nvec=None if spec.nvec is None else [int(n) for n in spec.nvec], n_discrete=spec.n_discrete,
                action_low=plain(spec.action_low), action_high=plain(spec.action_high))


ACTION_SPACE_TYPES = ("discrete", "continuous", "multi_discrete", "mixed")


def _record_problem(record: Any) -> Optional[str]:
    """What is wrong with an ``action_space_record`` (None when it is well formed)."""
    if not isinstance(record, dict):
        return f"it is a {type(record).__name__}, not a dict"
    kind, shape = record.get("action_space_type"), record.get("action_shape")
    if kind not in ACTION_SPACE_TYPES:
        return f"action_space_type={kind!r} is none of {list(ACTION_SPACE_TYPES)}"
    if isinstance(shape, bool) or not isinstance(shape, (int, np.integer)) or shape < 1:
        return f"action_shape={shape!r} is not a whole number >= 1"
    if kind == "multi_discrete" and not (isinstance(record.get("nvec"), (list, tuple)) and len(record["nvec"]) == shape
                                         and all(isinstance(n, (int, np.integer)) for n in record["nvec"])):
        return f"nvec={record.get('nvec')!r} is not {shape} whole numbers"
    if kind == "mixed" and (isinstance(record.get("n_discrete"), bool)
                            or not isinstance(record.get("n_discrete"), (int, np.integer))):
        return f"n_discrete={record.get('n_discrete')!r} is not a whole number"
    if kind in ("continuous", "mixed"):
        for key in ("action_low", "action_high"):
            value = record.get(key)
            if not (isinstance(value, (list, tuple)) and len(value) == shape
                    and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
                return f"{key}={value!r} is not a list of {shape} numbers"
    return None


def spec_from_record(record: dict, obs_space: Optional[dict] = None, obs_shape: Any = None,
                     where: str = "the checkpoint") -> EnvSpec:
    """The EnvSpec of an ``action_space_record`` (and the observation description of the run's config); a
    malformed record is a UserError naming ``where`` it came from."""
    problem = _record_problem(record)
    if problem:
        raise UserError(f"{where} has a malformed meta['env'] (the env's action space it was trained on): {problem}; "
                        f"the file is damaged or was not written by ding_lite: use another checkpoint of the run")

    def array(x):
        return None if x is None else np.asarray(x, dtype=np.float32)
    return EnvSpec(obs_shape=obs_shape, action_space_type=record["action_space_type"],
                   action_shape=int(record["action_shape"]),
                   nvec=None if record.get("nvec") is None else tuple(int(n) for n in record["nvec"]),
                   action_low=array(record.get("action_low")), action_high=array(record.get("action_high")),
                   n_discrete=record.get("n_discrete"), obs_space=obs_space)


def _plain(x):
    return None if x is None else np.asarray(x).tolist()


def action_space_differences(saved: EnvSpec, current: EnvSpec) -> List[str]:
    """How the action space of ``current`` differs from ``saved`` (type, sizes, Box bounds), one item per key."""
    out = []
    for key in ("action_space_type", "action_shape", "nvec", "n_discrete"):
        a, b = getattr(saved, key), getattr(current, key)
        if a != b:
            out.append(f"{key}: checkpoint {a!r}, env {b!r}")
    if out:
        return out
    for key in ("action_low", "action_high"):
        a, b = getattr(saved, key), getattr(current, key)
        if (a is None) != (b is None) or (a is not None and not np.array_equal(np.asarray(a, np.float32),
                                                                                np.asarray(b, np.float32),
                                                                                equal_nan=True)):
            out.append(f"{key}: checkpoint {_plain(a)}, env {_plain(b)}")
    return out

"""Observation spaces: what ding_lite accepts, how it describes them to models, and how observations become tensors.

Accepted: ``Box``, ``Discrete``, ``MultiBinary``, ``MultiDiscrete`` and ``Dict``/``Tuple`` nestings of them. Anything
else (``Text``, ``Graph``, ``Sequence``, ...) is refused in one message that names every such key path and the fix: a
wrapper from the config (``env.wrappers``) that drops or converts it.

The *description* of a space (``describe_obs_space``) is plain config data, filled into ``policy.model.obs_space``
by the pipelines and saved in total_config.py; the models build their encoders from it
(:mod:`ding_lite.torch_utils.obs_encoder`). A leaf is one of::

    dict(space='box', shape=[7, 7, 3], dtype='uint8')
    dict(space='discrete', n=4, start=0)
    dict(space='multi_discrete', nvec=[3, 2], start=[0, 0], shape=[2])   # nvec and start flattened
    dict(space='multi_binary', shape=[5])

and a nesting is ``dict(space='dict', spaces={key: description})`` or ``dict(space='tuple', spaces={'0': ..., '1':
...})``: a Tuple's items are keyed by their position as strings, because inside ding_lite an observation is a tensor
(a Box, Discrete, ... space) or a nested *dict* of tensors (Dict and Tuple alike), which is what the replay buffer,
the hooks and the models see. Dict keys keep gymnasium's order (sorted).

As tensors (``obs_to_tensor``): float leaves become float32; integer leaves keep their dtype, so uint8 frames stay
uint8 up to the model (which scales them); a Discrete leaf is an int64 index ``(B,)``; MultiBinary stays int8.
"""
from typing import Any, Dict, Iterator, List, Tuple, Union

import gymnasium as gym
import numpy as np
import torch

from ding_lite.utils import UserError

ObsTree = Union[torch.Tensor, Dict[str, Any]]
LEAF_SPACES = ("box", "discrete", "multi_discrete", "multi_binary")
NESTED_SPACES = ("dict", "tuple")


def describe_obs_space(space: gym.Space) -> dict:
    """The config description of ``space`` (module docstring); a UserError naming every unsupported key path."""
    bad: List[Tuple[str, gym.Space]] = []
    description = _describe(space, "obs", bad)
    if bad:
        keep = list(description["spaces"]) if isinstance(space, gym.spaces.Dict) else []
        raise UnsupportedObsSpace(bad, [k for k in keep if f"obs[{k!r}]" not in {p for p, _ in bad}])
    return description


def _describe(space: gym.Space, path: str, bad: List[Tuple[str, gym.Space]]) -> dict:
    if isinstance(space, gym.spaces.Box):
        return dict(space="box", shape=[int(d) for d in space.shape], dtype=np.dtype(space.dtype).name)
    if isinstance(space, gym.spaces.Discrete):
        return dict(space="discrete", n=int(space.n), start=int(space.start))
    if isinstance(space, gym.spaces.MultiDiscrete):
        return dict(space="multi_discrete", nvec=[int(n) for n in np.asarray(space.nvec).reshape(-1)],
                    start=[int(n) for n in np.asarray(space.start).reshape(-1)], shape=[int(d) for d in space.shape])
    if isinstance(space, gym.spaces.MultiBinary):
        return dict(space="multi_binary", shape=[int(d) for d in np.atleast_1d(space.shape)])
    if isinstance(space, gym.spaces.Dict):
        return dict(space="dict", spaces={str(k): _describe(s, f"{path}[{k!r}]", bad) for k, s in space.items()})
    if isinstance(space, gym.spaces.Tuple):
        return dict(space="tuple", spaces={str(i): _describe(s, f"{path}[{i}]", bad) for i, s in enumerate(space)})
    bad.append((path, space))
    return {}


class UnsupportedObsSpace(UserError, TypeError):
    """An observation space (or part of one) that no ding_lite model can take."""

    def __init__(self, bad: List[Tuple[str, gym.Space]], keep: List[str] = ()) -> None:
        """``bad``: (key path, space) of every unsupported part; ``keep``: the top-level Dict keys that are fine."""
        self.paths = [path for path, _ in bad]
        listed = "; ".join(f"{path} is {space}" for path, space in bad)
        if all(_dict_key(path) for path in self.paths) and keep:
            fix = (f"drop it with a wrapper from the config: env.wrappers=[dict(type='gymnasium.wrappers:"
                   f"FilterObservation', kwargs=dict(filter_keys={list(keep)}))], or convert it with your own "
                   f"gymnasium.ObservationWrapper ('your_module:YourWrapper' in env.wrappers)")
        else:
            fix = ("convert it to a Box/Discrete/MultiBinary/MultiDiscrete space (or a Dict/Tuple of them) with a "
                   "gymnasium.ObservationWrapper listed in env.wrappers ('your_module:YourWrapper')")
        super().__init__(f"unsupported observation space: {listed}. ding_lite takes Box, Discrete, MultiBinary, "
                         f"MultiDiscrete and Dict/Tuple nestings of them; {fix}")


def _dict_key(path: str) -> str:
    """The top-level Dict key of a path like ``obs['mission']`` (empty when the path is not one)."""
    if path.startswith("obs['") and path.endswith("']") and path.count("[") == 1:
        return path[5:-2]
    return ""


def is_nested(description: dict) -> bool:
    return description.get("space") in NESTED_SPACES


def leaf_shape(leaf: dict) -> List[int]:
    """The per-observation shape of a leaf's tensor: a Box's shape, ``[]`` for Discrete (an index)."""
    return [] if leaf["space"] == "discrete" else list(leaf["shape"])


def obs_shape_of(description: dict) -> Any:
    """``policy.model.obs_shape``: an int (1-D Box) or list (other Box) as before nested spaces existed; for other
    spaces the per-leaf shapes (a nested dict for Dict/Tuple). Models that know ``obs_space`` read that instead."""
    if is_nested(description):
        return {key: obs_shape_of(sub) for key, sub in description["spaces"].items()}
    shape = leaf_shape(description)
    return shape[0] if description["space"] == "box" and len(shape) == 1 else shape


def obs_to_tensor(obs: Any) -> ObsTree:
    """A batch of observations from a vector env (an array, or a dict/tuple nesting of arrays) as a tensor tree that
    shares the arrays' memory where it can: float leaves as float32, integer leaves in their own dtype. A Tuple's
    items become dict keys '0', '1', ..."""
    if type(obs) is np.ndarray:  # the common case first: one Box
        x = torch.from_numpy(obs)
        return x.float() if x.is_floating_point() else x
    if isinstance(obs, dict):
        return {str(k): obs_to_tensor(v) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return {str(i): obs_to_tensor(v) for i, v in enumerate(obs)}
    return obs_to_tensor(np.asarray(obs))


def numpy_leaves(obs: Any, prefix: str = "obs") -> Iterator[Tuple[str, np.ndarray]]:
    """(key path, array) of every leaf of an env observation (array, or dict/tuple nesting), for checks."""
    if isinstance(obs, dict):
        for key, value in obs.items():
            yield from numpy_leaves(value, f"{prefix}[{key!r}]")
    elif isinstance(obs, tuple):
        for i, value in enumerate(obs):
            yield from numpy_leaves(value, f"{prefix}[{i}]")
    else:
        yield prefix, np.asarray(obs)


def copy_obs(obs: Any) -> Any:
    """A copy of an env observation batch (array, or dict/tuple nesting)."""
    if isinstance(obs, dict):
        return {k: copy_obs(v) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(copy_obs(v) for v in obs)
    return np.array(obs, copy=True)


def set_obs_row(batch: Any, i: int, obs: Any) -> None:
    """``batch[i] = obs`` leaf by leaf: one env's observation into row i of a batch of the same nesting."""
    if isinstance(batch, dict):
        for key in batch:
            set_obs_row(batch[key], i, obs[key])
    elif isinstance(batch, tuple):
        for sub, value in zip(batch, obs):
            set_obs_row(sub, i, value)
    else:
        batch[i] = obs


def replace_final_obs(next_obs: Any, done: np.ndarray, info: Dict[str, Any]) -> Any:
    """The observation each env reached, with gymnasium's ``final_obs`` substituted where an episode ended.

    In SAME_STEP autoreset mode ``next_obs`` of a finished env is already the next episode's first observation."""
    if not done.any():
        return next_obs
    real = copy_obs(next_obs)
    for i in np.flatnonzero(info["_final_obs"]):
        set_obs_row(real, i, info["final_obs"][i])
    return real

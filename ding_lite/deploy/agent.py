"""Using a trained policy from Python: ``agent = ding_lite.load(path)`` then ``agent.predict(obs)``.

``load`` takes a run directory (it loads ``ckpt/ckpt_best.pth.tar`` if there is one, else ``ckpt/ckpt_last.pth.tar``)
or a checkpoint file: inside a run (``<run_dir>/ckpt/<name>.pth.tar``) the run's ``total_config.py`` beside ``ckpt/``
gives the config; a checkpoint anywhere else (its folder not named ``ckpt``) is read with the ``total_config.py``
beside it. The config is read as literals, never run (``ding_lite/config/literal.py``), and the modules it names are
imported only with ``trust_config=True``; the checkpoint loads with ``weights_only=True``. No env is built: the observation space comes from the config (``policy.model.obs_space``), the
action space (bounds included) from the checkpoint (``meta['env']``, recorded by the pipelines). A checkpoint written
before ding_lite recorded it falls back to building one env of the config, once, to read its action space
(``agent.env_built`` says so, and a warning too).

``predict(obs, deterministic=True)`` takes one observation or a batch, in the env's own format (an array, or a
dict/tuple nesting of arrays for Dict/Tuple spaces), and returns what ``env.step`` takes (a vector env's ``step`` for
a batch): continuous actions mapped onto the Box bounds and clipped exactly as the workers do
(:class:`ding_lite.envs.ActionAdapter`), discrete actions as int64, a mixed action as ``(discrete, continuous)``.
Observation normalisation (``env.normalize_obs``) is applied inside the policy, with the run's statistics.

A recurrent policy (``policy.model.core='lstm'``, ``agent.recurrent``) takes and returns its state:
``action, state = agent.predict(obs, state=state)``, ``state`` a float32 array ``(2, H)`` for one observation (or
``(4, H)`` with separate actor and critic cores; ``agent.state_shape``), ``(batch, 2, H)`` for a batch; ``None``
(or ``agent.initial_state()``, zeros) at the start of an episode. Zero an env's rows when its episode ends.
"""
import copy
import os
import warnings
from typing import Any, List, Optional, Tuple

import numpy as np
import torch
from easydict import EasyDict

from ding_lite.config import compile_config
from ding_lite.config.defaults import model_type_defaults
from ding_lite.config.literal import read_run_config
from ding_lite.envs import ActionAdapter, EnvSpec
from ding_lite.envs.env_spec import spec_from_record
from ding_lite.envs.obs_space import is_nested, leaf_shape, obs_to_tensor
from ding_lite.policy import Policy
from ding_lite.policy.base_policy import check_cuda
from ding_lite.run import load_checkpoint
from ding_lite.run.checkpoint import check_checkpoint_fits, load_model_weights
from ding_lite.utils.import_path import isolated_imports
from ding_lite.utils import POLICY_REGISTRY, UserError

RUN_CHECKPOINTS = ("ckpt_best", "ckpt_last")  # what a run directory loads, in this order
EXPECTED = ("a run directory (holding total_config.py and ckpt/ckpt_best.pth.tar or ckpt/ckpt_last.pth.tar), a "
            "checkpoint file inside one (<run_dir>/ckpt/<name>.pth.tar) or a checkpoint file with the run's "
            "total_config.py beside it")
_LEAF_DTYPES = {"discrete": np.int64, "multi_discrete": np.int64, "multi_binary": np.int8}


def resolve_checkpoint(path: str) -> Tuple[str, str]:
    """``(run_dir, checkpoint file)`` of a run directory or a checkpoint file; a UserError naming ``path`` and what
    is expected otherwise."""
    path = os.fspath(path)
    if os.path.isdir(path):
        for name in RUN_CHECKPOINTS:
            ckpt = os.path.join(path, "ckpt", f"{name}.pth.tar")
            if os.path.isfile(ckpt):
                return path, ckpt
        raise UserError(f"'{path}' is a directory but not a run directory with a checkpoint: it has no "
                        f"ckpt/ckpt_best.pth.tar or ckpt/ckpt_last.pth.tar. Expected {EXPECTED}")
    if os.path.isfile(path):
        if not path.endswith(".pth.tar"):
            raise UserError(f"'{path}' is not a checkpoint (a .pth.tar file). Expected {EXPECTED}")
        return checkpoint_run_dir(path), path
    raise UserError(f"'{path}' does not exist. Expected {EXPECTED}")


def checkpoint_run_dir(ckpt: str) -> str:
    """The folder whose total_config.py goes with the checkpoint file ``ckpt``: the run directory (the parent of
    ``ckpt/``) when the file's folder is named ``ckpt``, else the file's own folder (a checkpoint copied out of its
    run, with the run's total_config.py beside it)."""
    folder = os.path.dirname(os.path.abspath(ckpt))
    return os.path.dirname(folder) if os.path.basename(folder) == "ckpt" else folder


def run_config_input(run_dir: str, ckpt: str, trust_config: bool = False) -> tuple:
    """``(main_config, create_config)`` of the run in ``run_dir`` (its total_config.py, read as literals unless
    ``trust_config``; ``ding_lite/config/literal.py``)."""
    config_path = os.path.join(run_dir, "total_config.py")
    if not os.path.isfile(config_path):
        beside = "in its run directory" if os.path.basename(os.path.dirname(os.path.abspath(ckpt))) == "ckpt" \
            else "beside it (the checkpoint is not in a run's ckpt/ folder)"
        raise UserError(f"checkpoint '{ckpt}' has no total_config.py {beside}: '{config_path}' is missing (a "
                        f"checkpoint is read with its run's config). Expected {EXPECTED}")
    return read_run_config(config_path, trust_config)


def run_config(run_dir: str, ckpt: str, trust_config: bool = False) -> EasyDict:
    """The compiled config of the run in ``run_dir`` (its total_config.py; see ``run_config_input``)."""
    return compile_config(run_config_input(run_dir, ckpt, trust_config))


def obs_description(model_cfg: EasyDict) -> dict:
    """``policy.model.obs_space``, or for configs without it a float Box of ``policy.model.obs_shape``."""
    space = model_cfg.get("obs_space")
    if space:
        return space
    shape = model_cfg.obs_shape
    return dict(space="box", shape=[int(shape)] if isinstance(shape, int) else [int(d) for d in shape],
                dtype="float32")


def description_leaves(description: dict) -> List[dict]:
    """The leaf descriptions, in the description's order (Dict keys as listed, Tuple items by position)."""
    if is_nested(description):
        return [leaf for sub in description["spaces"].values() for leaf in description_leaves(sub)]
    return [description]


def obs_leaves(obs: Any, description: dict, path: str = "obs") -> List[Tuple[str, np.ndarray, dict]]:
    """(key path, array, leaf description) of every leaf of an env-format observation, in the description's order."""
    if not is_nested(description):
        return [(path, obs, description)]
    out = []
    for i, (key, sub) in enumerate(description["spaces"].items()):
        if description["space"] == "tuple":
            if not isinstance(obs, (tuple, list)) or len(obs) != len(description["spaces"]):
                raise UserError(f"{path}: expected a tuple of {len(description['spaces'])} items (a Tuple "
                                f"observation), got {type(obs).__name__}")
            out += obs_leaves(obs[i], sub, f"{path}[{i}]")
        else:
            if not isinstance(obs, dict) or key not in obs:
                raise UserError(f"{path}: expected a dict with key {key!r} (a Dict observation with keys "
                                f"{list(description['spaces'])}), got {type(obs).__name__}"
                                + (f" with keys {list(obs)}" if isinstance(obs, dict) else ""))
            out += obs_leaves(obs[key], sub, f"{path}[{key!r}]")
    return out


def as_batch(obs: Any, description: dict) -> Tuple[List[np.ndarray], bool]:
    """The leaves of ``obs`` as arrays with a batch dim (in the description's order, dtypes as the env gives them)
    and whether ``obs`` was a single observation (leading dims compared with the described shapes)."""
    arrays, single = [], None
    for path, value, leaf in obs_leaves(obs, description):
        dtype = leaf.get("dtype") if leaf["space"] == "box" else _LEAF_DTYPES[leaf["space"]]
        array = np.asarray(value, dtype=dtype)
        shape = leaf_shape(leaf)
        if tuple(array.shape) == tuple(shape):
            is_single = True
        elif array.ndim == len(shape) + 1 and tuple(array.shape[1:]) == tuple(shape):
            is_single = False
        else:
            raise UserError(f"{path} has shape {tuple(array.shape)}; the run's observation space expects "
                            f"{tuple(shape)} (one observation) or (batch, {', '.join(map(str, shape))}) (a batch)")
        if single is not None and single != is_single:
            raise UserError(f"{path}: some leaves of the observation are batched and others are not")
        if array.dtype.kind == "f" and not np.isfinite(array).all():  # the argmax of NaN logits is action 0
            index = tuple(int(k) for k in np.argwhere(~np.isfinite(array))[0])
            raise UserError(f"{path} holds {array[index]} at index {index}: the policy's action for a non-finite "
                            f"observation means nothing; pass finite observations (check the env or its preprocessing)")
        single = is_single
        arrays.append(array[None] if is_single else array)
    if len({a.shape[0] for a in arrays}) > 1:
        raise UserError(f"the observation's leaves have different batch sizes: {[a.shape[0] for a in arrays]}")
    return arrays, bool(single)


def leaves_to_tree(arrays: List[np.ndarray], description: dict) -> Any:
    """Leaf arrays (description order) -> the tensor tree the policy takes (``obs_to_tensor``'s format)."""
    it = iter(arrays)

    def build(desc: dict) -> Any:
        if is_nested(desc):
            return {key: build(sub) for key, sub in desc["spaces"].items()}
        return next(it)
    return obs_to_tensor(build(description))


class Agent:
    """A trained policy that acts in an env's own units; made by :func:`load` (or :meth:`from_policy`).

    Attributes: ``policy`` (the :class:`~ding_lite.policy.Policy`, its collect and eval modes enabled), ``config``
    (the run's compiled config), ``device``, ``spec`` (the env's :class:`~ding_lite.envs.EnvSpec`, rebuilt without an
    env), ``checkpoint`` (the file loaded), ``checkpoint_name`` ('ckpt_best', 'ckpt_last', ... or None),
    ``env_built`` (True when the action space had to be read from one env built for the purpose), ``run_dir`` (the
    folder whose total_config.py gave the config, for a loaded agent).
    """

    def __init__(self, policy: Policy, config: EasyDict, spec: EnvSpec, checkpoint: Optional[str] = None,
                 env_built: bool = False) -> None:
        self.policy, self.config, self.spec = policy, config, spec
        self.device = policy.device
        self.checkpoint = checkpoint
        self.checkpoint_name = None if checkpoint is None else os.path.basename(checkpoint)[:-len(".pth.tar")]
        self.env_built = env_built
        self.run_dir: Optional[str] = None  # the folder of the total_config.py read (set by ``load``)
        self.obs_space = obs_description(policy.cfg.model)
        self.adapter = ActionAdapter(spec, policy.action_bound)
        policy.model.eval()

    @classmethod
    def from_policy(cls, policy: Policy, spec: EnvSpec, config: Optional[EasyDict] = None) -> "Agent":
        """An agent around a live policy (built with collect and eval modes) and its env's spec."""
        return cls(policy, config if config is not None else EasyDict(policy=policy.cfg), spec)

    @property
    def recurrent(self) -> bool:
        """Whether the policy has a recurrent core: then ``predict`` takes and returns its state."""
        return bool(getattr(self.policy, "_recurrent", False))

    @property
    def state_shape(self) -> Optional[Tuple[int, ...]]:
        """The recurrent state of one env, e.g. ``(2, H)``; None for a feed-forward policy."""
        return tuple(self.policy.model.state_shape) if self.recurrent else None

    def initial_state(self, batch: Optional[int] = None) -> np.ndarray:
        """The state of an episode's start (zeros): ``state_shape`` for one env, ``(batch, *state_shape)``."""
        if not self.recurrent:
            raise UserError("this policy has no recurrent state (policy.model.core is None)")
        return np.zeros(self.state_shape if batch is None else (batch, *self.state_shape), np.float32)

    def _core_state(self, state: Any, n: int, single: bool) -> torch.Tensor:
        if state is None:
            return torch.zeros((n, *self.state_shape))
        array = np.asarray(state, dtype=np.float32)
        want = self.state_shape if single else (n, *self.state_shape)
        if tuple(array.shape) != tuple(want):
            raise UserError(f"state has shape {tuple(array.shape)}; this policy's recurrent state is {want} for "
                            f"{'one observation' if single else f'a batch of {n}'} (None: an episode's start)")
        return torch.from_numpy(array[None] if single else array)

    @torch.no_grad()
    def predict(self, obs: Any, deterministic: bool = True, state: Any = None) -> Any:
        """The action(s) for one observation or a batch (see the module docstring); ``deterministic=False`` samples
        from the policy (as collection does). A recurrent policy returns ``(action, next_state)`` and takes
        ``state`` (None: an episode's start)."""
        arrays, single = as_batch(obs, self.obs_space)
        tree = self._with_mask(leaves_to_tree(arrays, self.obs_space), obs, single, arrays[0].shape[0])
        mode = self.policy.eval_mode if deterministic else self.policy.collect_mode
        if self.recurrent:
            out = mode.forward(tree, core_state=self._core_state(state, arrays[0].shape[0], single))
            next_state = out["next_core_state"].cpu().numpy()
            action = self._env_action(out["action"], single)
            return action, (next_state[0] if single else next_state)
        if state is not None:
            raise UserError("state= is for recurrent policies (policy.model.core='lstm'); this one is feed-forward")
        return self._env_action(mode.forward(tree)["action"], single)

    def _with_mask(self, tree: Any, obs: Any, single: bool, n: int) -> Any:
        """The policy's input with the action mask the observation carries (``policy.action_mask_key``; a Tuple of
        per-head masks concatenated), shape (n, A) bool; without one the policy acts unmasked."""
        key = self.policy.cfg.get("action_mask_key")
        if not key or not isinstance(obs, dict) or key not in obs:
            return tree
        mask = obs[key]
        mask = np.concatenate([np.asarray(m) for m in mask], -1) if isinstance(mask, (tuple, list)) else mask
        mask = np.asarray(mask).astype(bool)
        mask = mask[None] if single else mask
        actions = sum(self.spec.nvec) if self.spec.nvec else self.spec.action_shape
        if mask.ndim != 2 or mask.shape != (n, actions):
            raise UserError(f"obs[{key!r}] (the action mask) has shape {np.shape(obs[key])}; expected (A,) for one "
                            f"observation or (batch, A), A = {actions} actions (MultiDiscrete: sum(nvec))")
        return {**tree, key: torch.from_numpy(mask)}

    def _env_action(self, action: Any, single: bool) -> Any:
        action = self.adapter(action)
        if self.spec.action_space_type in ("discrete", "multi_discrete"):
            action = action.astype(np.int64)
        elif self.spec.action_space_type == "mixed":
            action = (action[0].astype(np.int64), action[1])
        if single:
            return tuple(a[0] for a in action) if isinstance(action, tuple) else action[0]
        return action

    def __repr__(self) -> str:
        return (f"Agent({self.config.policy.type}, {self.spec.action_space_type} actions, checkpoint="
                f"{self.checkpoint!r}, device={self.device})")


def build_acting_policy(policy_cfg: EasyDict) -> Policy:
    """The policy of ``policy_cfg`` with its collect and eval modes (no learner), evaluation purely greedy (a
    configured ``eval.epsilon`` is for evaluation runs, not for a deterministic ``predict``)."""
    policy_cfg = copy.deepcopy(policy_cfg)
    if "epsilon" in policy_cfg.get("eval", {}):
        policy_cfg.eval.epsilon = 0.0
    return POLICY_REGISTRY.get(policy_cfg.type)(policy_cfg, enable_field=("collect", "eval"))


def _spec_of(cfg: EasyDict, state: dict, ckpt: str) -> Tuple[EnvSpec, bool]:
    meta = state.get("meta") or {}
    record = meta.get("env") if isinstance(meta, dict) else None
    obs_space = obs_description(cfg.policy.model)
    if record:
        spec = spec_from_record(record, obs_space, cfg.policy.model.get("obs_shape"), where=f"checkpoint '{ckpt}'")
        check_record_fits_config(spec, cfg, ckpt)
        return spec, False
    from ding_lite.envs import env_factory  # the fallback only: checkpoints written before meta['env']
    warnings.warn(f"checkpoint '{ckpt}' does not record its env's action space (it predates that); building one "
                  f"env of its config to read it")
    env = env_factory(cfg.env)()
    try:
        return EnvSpec.from_spaces(env.observation_space, env.action_space), True
    finally:
        env.close()


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def check_record_fits_config(spec: EnvSpec, cfg: EasyDict, ckpt: str) -> None:
    """The checkpoint's recorded action space (``meta['env']``) against what the run's config says of its env
    (``policy.action_space``, ``policy.model.action_shape``, filled from the env when the run started): a checkpoint
    beside another run's config is refused. (Box bounds are not in the config; ``-m eval`` and ``--resume``, which
    build the env, compare them too: ``check_env_fits``.)"""
    problems = []
    configured = cfg.policy.get("action_space")
    if configured not in (None, "auto") and configured != spec.action_space_type:
        problems.append(f"action space: checkpoint {spec.action_space_type!r}, config policy.action_space "
                        f"{configured!r}")
    shape = cfg.policy.model.get("action_shape")
    if shape is not None and not problems:
        if _as_list(shape) != _as_list(spec.model_action_shape):
            problems.append(f"action shape: checkpoint {spec.model_action_shape!r}, config policy.model.action_shape "
                            f"{shape!r}")
    if problems:
        raise UserError(f"cannot load checkpoint '{ckpt}': its recorded env (meta['env']) does not fit its run's "
                        f"config ({'; '.join(problems)}): the checkpoint is from another run; load it from its own "
                        f"run directory")


def load(path: str, device: str = "cpu", trust_config: bool = False) -> Agent:
    """The :class:`Agent` of a run directory or checkpoint file (module docstring); ``device``: 'cpu' or 'cuda'.

    The run's total_config.py is read as literals, never executed, and the modules it names outside ding_lite and
    gymnasium are not imported: such a file is refused with one line; nothing is imported from the run directory or
    the working directory meanwhile (``ding_lite/utils/import_path.py``). ``trust_config=True`` runs the file as
    Python and imports its modules; only for a run whose source you trust."""
    device = str(device)
    if device not in ("cpu", "cuda"):
        raise UserError(f"device={device!r}: must be 'cpu' or 'cuda'")
    run_dir, ckpt = resolve_checkpoint(path)
    if trust_config:
        return _load(run_dir, ckpt, device, trust_config)
    with isolated_imports(run_dir):  # nothing the run directory (or the working one) holds is imported
        return _load(run_dir, ckpt, device, trust_config)


def _load(run_dir: str, ckpt: str, device: str, trust_config: bool) -> Agent:
    cfg = run_config(run_dir, ckpt, trust_config)
    cfg.policy.cuda = device == "cuda"
    check_cuda(cfg.policy.cuda)
    state = load_checkpoint(ckpt)
    check_checkpoint_fits(state, cfg.policy.type, cfg.policy.model, ckpt, action="load",
                          defaults=model_type_defaults(cfg.policy.model.type))
    spec, env_built = _spec_of(cfg, state, ckpt)
    policy = build_acting_policy(cfg.policy)
    load_model_weights(policy.model, policy.checkpoint_model_state(state["policy"]), ckpt)
    agent = Agent(policy, cfg, spec, ckpt, env_built)
    agent.run_dir = run_dir
    return agent

"""Exporting a trained policy to one self-contained file: ``ding_lite export PATH --format torchscript|onnx``.

The file holds a :class:`DeployModule`: the trained model with the run's preprocessing (observation normalisation
from ``model.obs_normalizer``; uint8 frames are scaled by the model's own conv encoder) and the deterministic action
in env units out, exactly as ``ding_lite.load(PATH).predict(obs)`` gives it: the greedy discrete index (int64), the
per-head argmax (multi-discrete), the continuous mean (IMPALA, ACER) clipped to the Box, SAC's tanh(mu) mapped onto
the Box, and for a mixed space the pair (discrete, continuous). Its input is a batch of observations: one tensor,
or for a Dict/Tuple observation space one tensor per leaf, in the order of ``policy.model.obs_space`` (inputs named
by their key paths, e.g. ``agent.position``). With ``with_dist`` the outputs add the action distribution's
parameters (the actor's outputs: ``logit``, or ``mu`` and ``sigma``/``log_std``).

A policy trained with an action mask (``env.action_mask_key``) takes the mask as one more input after the observation
leaves, ``action_mask`` (batch, A) int8, 1 where the action is valid (A: the number of actions, sum(nvec) for
MultiDiscrete): the action is the greedy one among the valid actions, as ``predict`` gives it.

A recurrent policy (``policy.model.core='lstm'``) takes its state as one more input, ``core_state`` (batch,
*state_shape) float32 (zeros at an episode's start), after the observation leaves, and returns the next state as its
last output, ``next_core_state``: the caller carries it from step to step, as with ``predict``.

The module is inference-only (no parameter requires grad: outputs are plain tensors). The file is written
atomically, and an existing one is replaced only with ``force`` (``--force``).

Running the file needs only torch (TorchScript: ``torch.jit.load``) or onnxruntime (ONNX), never ding_lite.
"""
import copy
import os
import warnings
from typing import Any, List, Optional, Tuple

import numpy as np
import torch
from torch import nn

from ding_lite.envs.obs_space import is_nested, leaf_shape
from ding_lite.torch_utils import greedy_action, mask_logits
from ding_lite.utils import UserError
from ding_lite.utils.file_io import atomic_write

from .agent import Agent, load

FORMATS = {"torchscript": ".pt", "onnx": ".onnx"}
_LEAF_DTYPES = {"discrete": torch.int64, "multi_discrete": torch.int64, "multi_binary": torch.int8}


def leaf_paths(description: dict, prefix: Tuple[str, ...] = ()) -> List[Tuple[str, ...]]:
    """The key paths of the description's leaves, in order (``()`` for a plain Box)."""
    if is_nested(description):
        return [p for key, sub in description["spaces"].items() for p in leaf_paths(sub, prefix + (key,))]
    return [prefix]


def _leaves(description: dict) -> List[dict]:
    if is_nested(description):
        return [leaf for sub in description["spaces"].values() for leaf in _leaves(sub)]
    return [description]


class DeployModule(nn.Module):
    """Observations (batch) -> the deterministic action in env units; see the module docstring."""

    def __init__(self, agent: Agent, with_dist: bool = False) -> None:
        super().__init__()
        policy, spec = agent.policy, agent.spec
        self.model = policy.model
        self.description = agent.obs_space
        self.paths = leaf_paths(self.description)
        self.space = spec.action_space_type
        self.nvec = list(spec.nvec) if spec.nvec is not None else None
        self.with_dist = with_dist
        self.recurrent = agent.recurrent
        self.mask_width = (sum(self.nvec) if self.nvec else int(spec.action_shape)) \
            if policy.cfg.get("action_mask_key") else 0  # 0: no action mask input
        self.state_shape = agent.state_shape
        self.sac = hasattr(policy, "_actions")
        self.rescale = policy.action_bound == "rescale"
        self.sac_actions = policy._actions if self.sac else None
        low = spec.action_low if spec.action_low is not None else np.zeros(0, np.float32)
        high = spec.action_high if spec.action_high is not None else np.zeros(0, np.float32)
        self.register_buffer("low", torch.as_tensor(low, dtype=torch.float32))
        self.register_buffer("high", torch.as_tensor(high, dtype=torch.float32))

    def _tree(self, leaves: Tuple[torch.Tensor, ...]) -> Any:
        if not is_nested(self.description):
            return leaves[0]
        tree: dict = {}
        for path, x in zip(self.paths, leaves):
            node = tree
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = x
        return tree

    def _box(self, action: torch.Tensor) -> torch.Tensor:
        if self.rescale:
            center, half = (self.high + self.low) / 2, (self.high - self.low) / 2
            return center + half * action.clamp(-1.0, 1.0)
        return torch.maximum(torch.minimum(action, self.high), self.low)

    def forward(self, *leaves: torch.Tensor) -> Any:
        core_state = None
        if self.recurrent:  # the last input is the recurrent state
            leaves, core_state = leaves[:-1], leaves[-1]
        mask = None
        if self.mask_width:  # the action mask input, after the observation leaves
            leaves, mask = leaves[:-1], leaves[-1] != 0
        obs = self._tree(leaves)
        norm = getattr(self.model, "obs_normalizer", None)
        if norm is not None:
            obs = norm(obs)
        dist: List[torch.Tensor] = []
        if self.sac:
            action = self.sac_actions.act(obs, True) if mask is None else self.sac_actions.act(obs, True, mask)
            if self.with_dist and getattr(self.model, "actor", True) is not False:
                out = self.model.compute_actor(obs)
                if mask is not None:  # discrete SAC's logits, masked as the action was chosen
                    out = {**out, "logit": mask_logits(self.space, out["logit"], mask)}
                dist = [out[k] for k in sorted(out)]
        else:
            model_out = (self.model(obs, mode="compute_actor") if core_state is None
                         else self.model(obs, mode="compute_actor", state=core_state))
            logit = model_out["logit"]
            if core_state is not None:
                core_state = model_out["state"]
            if mask is not None:
                logit = mask_logits(self.space, logit, mask)
            action = greedy_action(self.space, logit, self.nvec)
            if self.with_dist:
                dist = [logit[k] for k in sorted(logit)] if isinstance(logit, dict) else [logit]
        if self.space == "mixed":
            out = (action["discrete"].long(), self._box(action["continuous"]))
        elif self.space == "continuous":
            out = (self._box(action),)
        else:
            out = (action.long(),)
        out = out + tuple(dist) + ((core_state,) if core_state is not None else ())
        return out[0] if len(out) == 1 else out


def output_names(module: DeployModule) -> List[str]:
    names = ["discrete", "continuous"] if module.space == "mixed" else ["action"]
    if module.with_dist:
        dummy = module_inputs(module, 2)
        with torch.no_grad():
            n = len(module(*dummy)) - len(names) - module.recurrent if isinstance(module(*dummy), tuple) else 0
        names += [f"dist_{i}" for i in range(n)]
    return names + (["next_core_state"] if module.recurrent else [])


def module_inputs(module: DeployModule, batch: int = 2) -> Tuple[torch.Tensor, ...]:
    """Example inputs of ``module``: observations, then for a recurrent policy a state (zeros)."""
    inputs = example_inputs(module.description, batch)
    if module.mask_width:
        inputs = inputs + (torch.ones((batch, module.mask_width), dtype=torch.int8),)
    if module.recurrent:
        inputs = inputs + (torch.zeros((batch, *module.state_shape)),)
    return inputs


def input_names(description: dict) -> List[str]:
    return [".".join(p) or "obs" for p in leaf_paths(description)]


def example_inputs(description: dict, batch: int = 2) -> Tuple[torch.Tensor, ...]:
    """A batch of valid observations (random within each leaf's range) for tracing."""
    g = torch.Generator().manual_seed(0)
    out = []
    for leaf in _leaves(description):
        shape = [batch] + leaf_shape(leaf)
        if leaf["space"] == "discrete":
            out.append(torch.randint(int(leaf["n"]), shape, generator=g) + int(leaf.get("start", 0)))
        elif leaf["space"] == "multi_discrete":
            nvec = torch.tensor(leaf["nvec"]).view(leaf["shape"])
            out.append((torch.rand(shape, generator=g) * nvec).long() + torch.tensor(leaf["start"]).view(leaf["shape"]))
        elif leaf["space"] == "multi_binary":
            out.append(torch.randint(2, shape, generator=g).to(torch.int8))
        else:
            dtype = getattr(torch, leaf.get("dtype", "float32"))
            if dtype.is_floating_point:
                out.append(torch.randn(shape, generator=g).to(dtype).float())
            else:
                out.append(torch.randint(0, 256, shape, generator=g).to(dtype))
    return tuple(out)


def inference_only(module: DeployModule) -> DeployModule:
    """A copy of ``module`` for deployment: eval mode, no parameter requires grad, so the exported file's outputs
    are plain tensors (``ts(x).numpy()`` works) and the agent's own model is left as it was."""
    module = copy.deepcopy(module).eval()
    for param in module.parameters():
        param.requires_grad_(False)
    return module


def export_agent(agent: Agent, fmt: str, path: str, with_dist: bool = False, force: bool = False) -> str:
    """Write ``agent``'s :class:`DeployModule` (inference-only) to ``path`` as TorchScript or ONNX; returns ``path``.
    The file is written to a temporary name and renamed into place (a failed export leaves no half file); an
    existing ``path`` is refused unless ``force``."""
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt!r}: must be one of {sorted(FORMATS)}")
    if agent.device.type != "cpu":
        raise UserError("export from a CPU agent (ding_lite.load(path, device='cpu'))")
    check_out(path, force)
    module = inference_only(DeployModule(agent, with_dist))
    inputs = module_inputs(module)
    with torch.no_grad(), warnings.catch_warnings():
        # torch's deprecation notes on tracing, and tracer notes on shape checks that hold for every batch size
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        if fmt == "torchscript":
            traced = torch.jit.trace(module, inputs, check_trace=False)
            atomic_write(path, lambda f: torch.jit.save(traced, f), "write the exported policy")
            return path
        names = (input_names(agent.obs_space) + (["action_mask"] if module.mask_width else [])
                 + (["core_state"] if module.recurrent else []))
        outputs = output_names(module)
        atomic_write(path, lambda f: torch.onnx.export(
            module, inputs, f, input_names=names, output_names=outputs, dynamo=False,
            dynamic_axes={n: {0: "batch"} for n in names + outputs}, opset_version=17), "write the exported policy")
    return path


def check_out(path: str, force: bool) -> None:
    """Refuse to replace an existing export without ``force`` (``--force``), or to write over a directory."""
    if os.path.isdir(path):
        raise UserError(f"output '{path}' is a directory; name the file to write with -o")
    if os.path.exists(path) and not force:
        raise UserError(f"output '{path}' exists; pass --force (force=True) to overwrite it, or name another file "
                        f"with -o")


def export(path: str, fmt: str, out: Optional[str] = None, with_dist: bool = False, force: bool = False,
           trust_config: bool = False) -> str:
    """Export the run or checkpoint at ``path`` (see ``ding_lite.load``, also for ``trust_config``) to ``out``
    (default: the checkpoint's name in the run directory, e.g. ``<run_dir>/ckpt_best.onnx``); returns the file
    written. An existing ``out`` is refused unless ``force``."""
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt!r}: must be one of {sorted(FORMATS)}")
    if out is not None:
        check_out(out, force)  # before the checkpoint is read
    agent = load(path, trust_config=trust_config)
    if out is None:
        out = os.path.join(agent.run_dir, f"{agent.checkpoint_name}{FORMATS[fmt]}")
    return export_agent(agent, fmt, out, with_dist, force)

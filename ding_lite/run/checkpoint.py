"""Checkpoints: plain dicts of tensors and numbers, written atomically, loadable with ``weights_only=True``.

A checkpoint records the policy type and the model config it was trained with (``meta``), so loading it under a
config that builds another model is refused with the differing keys named, instead of loading mismatched weights
(or an actor that silently gets the critic's encoder).
"""
import math
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence

import torch

from ding_lite.envs.env_spec import EnvSpec, action_space_differences, spec_from_record
from ding_lite.utils import UserError
from ding_lite.utils.dict_tools import to_plain
from ding_lite.utils.file_io import atomic_torch_save

CKPT_HELP = "checkpoints live in <run_dir>/ckpt/ (ckpt_best.pth.tar, ckpt_last.pth.tar, iteration_<N>.pth.tar)"
# Model config keys that say where the model's code comes from, not what it is.
_NOT_COMPARED = ("import_names",)


def save_checkpoint(state: Dict[str, Any], path: str) -> None:
    """Write ``state`` to ``path`` via a temporary file and a rename: a crash never leaves half a checkpoint."""
    atomic_torch_save(state, path)


def error_summary(err: Exception, limit: int = 240, all_lines: bool = False) -> str:
    """The error's first line (or all its lines, joined), cut at a sentence or clause end when long (never
    mid-word)."""
    lines = str(err).strip().splitlines() or [type(err).__name__]
    text = " ".join((" ".join(lines) if all_lines else lines[0]).split())
    if len(text) <= limit:
        return text.rstrip(".")
    cut = max(text.rfind(". ", 0, limit), text.rfind("; ", 0, limit), text.rfind(": ", 0, limit))
    return text[:cut] if cut > 40 else text[:text.rfind(" ", 0, limit)] + " ..."


def state_is_finite(tree: Any) -> bool:
    """No floating tensor or float in the nested ``tree`` (a policy state) holds a NaN or an infinity: a state that
    does is never written over a good checkpoint."""
    if isinstance(tree, dict):
        return all(state_is_finite(v) for v in tree.values())
    if isinstance(tree, (list, tuple)):
        return all(state_is_finite(v) for v in tree)
    if isinstance(tree, torch.Tensor):
        return not tree.is_floating_point() or bool(torch.isfinite(tree).all())
    if isinstance(tree, float):
        return math.isfinite(tree)
    return True


def load_checkpoint(path: str, map_location: str = "cpu") -> Dict[str, Any]:
    """Load a checkpoint written by ``save_checkpoint``; a missing or unreadable file is a ``UserError``."""
    if not os.path.isfile(path):
        raise UserError(f"checkpoint '{path}' not found; {CKPT_HELP}")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # torch raises several types for corrupt, truncated or foreign files
        raise UserError(f"checkpoint '{path}' cannot be read: it is truncated, corrupt or not a torch file "
                        f"({type(err).__name__}: {error_summary(err)}). Use another checkpoint; {CKPT_HELP}.") from None
    if not isinstance(state, dict) or "policy" not in state:
        raise UserError(f"'{path}' is not a ding_lite checkpoint (it has no 'policy' entry); {CKPT_HELP}")
    return state


def checkpoint_meta(policy_type: str, model_cfg: Mapping) -> Dict[str, Any]:
    """What a checkpoint records about the model it holds: the policy type and the compiled ``policy.model``."""
    model = {k: v for k, v in to_plain(model_cfg).items() if k not in _NOT_COMPARED}
    if model.get("core", "<absent>") is None:  # feed-forward: recorded as before the recurrent core existed
        model.pop("core")
        model.pop("core_size", None)
    return {"policy_type": policy_type, "model": model}


class _NotRecorded:
    """A model key one side does not record (a key newer than the checkpoint, or a feed-forward model's ``core``)."""

    def __repr__(self) -> str:
        return "not set"


NOT_RECORDED = _NotRecorded()


def _diff(saved: Any, current: Any, prefix: str) -> List[str]:
    if isinstance(saved, dict) and isinstance(current, dict):
        out = []
        for key in sorted(set(saved) | set(current), key=str):
            out += _diff(saved.get(key, NOT_RECORDED), current.get(key, NOT_RECORDED), f"{prefix}.{key}")
        return out
    if isinstance(saved, (list, tuple)) and isinstance(current, (list, tuple)):
        saved, current = list(saved), list(current)
    return [] if saved == current else [f"{prefix}: checkpoint {saved!r}, config {current!r}"]


def check_checkpoint_fits(state: Mapping[str, Any], policy_type: str, model_cfg: Mapping, path: str,
                          action: str = "load", defaults: Optional[Mapping[str, Any]] = None) -> None:
    """Refuse a checkpoint whose policy type or model config differs from the run's, naming every differing key.

    ``defaults``: the model's default of each ``policy.model`` key (``ding_lite.config.defaults.model_type_defaults``).
    A checkpoint records the model keys of its day; a key added since defaults to what the code built before it
    existed (a new key must not change an old config's model), so a checkpoint without it fits a config that leaves
    the key at its default. Without ``defaults`` such a key is a difference.

    Checkpoints written before ding_lite recorded ``meta`` pass here; their weights are still checked by the
    model's strict ``load_state_dict`` (see ``load_model_weights``)."""
    meta: Optional[Mapping[str, Any]] = state.get("meta")
    if not meta:
        return
    if not isinstance(meta, Mapping) or not isinstance(meta.get("model", {}), Mapping):
        raise UserError(f"checkpoint '{path}' has a malformed meta record (meta={type(meta).__name__}, "
                        f"meta['model']={type(meta.get('model')).__name__ if isinstance(meta, Mapping) else '-'}; "
                        f"dicts expected): the file is damaged or was not written by ding_lite; {CKPT_HELP}")
    current = checkpoint_meta(policy_type, model_cfg)
    problems = []
    if meta.get("policy_type") != policy_type:
        problems.append(f"policy.type: checkpoint {meta.get('policy_type')!r}, config {policy_type!r}")
    saved_model, current_model = dict(meta.get("model", {})), dict(current["model"])
    for model in (saved_model, current_model):  # a feed-forward model records no core (checkpoint_meta): None
        model.setdefault("core", None)
    defaults = defaults or {}
    for key in set(current_model) - set(saved_model):  # a key newer than the checkpoint, at its default: no change
        if key in defaults and _diff(defaults[key], current_model[key], key) == []:
            saved_model[key] = current_model[key]
    problems += _diff(saved_model, current_model, "policy.model")
    if problems:
        raise UserError(f"cannot {action} checkpoint '{path}': it was saved with another model than this config "
                        f"builds ({'; '.join(problems)}). Use the config the checkpoint was trained with (its run's "
                        f"total_config.py), or set those keys to the checkpoint's values")


def recorded_env(state: Mapping[str, Any], path: str) -> Optional[EnvSpec]:
    """The action space a checkpoint's ``meta['env']`` records (None for checkpoints written before it); a
    malformed record is a UserError naming ``path``."""
    meta = state.get("meta")
    record = meta.get("env") if isinstance(meta, Mapping) else None
    return None if not record else spec_from_record(record, where=f"checkpoint '{path}'")


def check_env_fits(state: Mapping[str, Any], spec: EnvSpec, path: str, env_name: str, action: str = "load") -> None:
    """Refuse a checkpoint whose recorded action space (``meta['env']``: type, sizes, Box bounds) differs from the
    config's env ``spec``: its actions would be mapped onto the wrong bounds without a word."""
    saved = recorded_env(state, path)
    problems = action_space_differences(saved, spec) if saved is not None else []
    if problems:
        raise UserError(f"cannot {action} checkpoint '{path}': it was trained on an env with another action space "
                        f"than this config's env '{env_name}' ({'; '.join(problems)}). Use the config the checkpoint "
                        f"was trained with (its run's total_config.py: env_id and env.wrappers)")


def checkpoint_counters(state: Mapping[str, Any], path: str, keys: Sequence[str] = ("train_iter", "env_step")
                        ) -> Dict[str, Any]:
    """The checkpoint's ``counters``, checked to hold numbers under ``keys``; a UserError naming ``path``
    otherwise (a checkpoint ding_lite did not write, or a damaged one)."""
    counters = state.get("counters")
    missing = [k for k in keys if not isinstance(counters, Mapping) or isinstance(counters.get(k), bool)
               or not isinstance(counters.get(k), (int, float))]
    if missing:
        raise UserError(f"checkpoint '{path}' has no usable counters ({', '.join(missing)} missing or not numbers): "
                        f"it was not written by a ding_lite run, or it is damaged; use another checkpoint; "
                        f"{CKPT_HELP}")
    return dict(counters)


def load_model_weights(model: torch.nn.Module, weights: Mapping[str, Any], path: str) -> None:
    """``model.load_state_dict(weights)`` with a mismatch reported as one clear ``UserError``."""
    try:
        model.load_state_dict(weights)
    except RuntimeError as err:
        raise UserError(f"checkpoint '{path}' does not fit this config's model (was it trained with another "
                        f"config?): {error_summary(err, 300, all_lines=True)}") from None


# ---- the replay buffer beside ckpt_last (policy.other.replay_buffer.save_replay_buffer) -----------------------------
REPLAY_BUFFER_FILE = "replay_buffer.pth.tar"


def save_replay_buffer(buffer: Any, counters: Mapping[str, Any], ckpt_folder: str) -> str:
    """Write ``buffer``'s content (``ding_lite.data.buffer_io``) to ``<ckpt_folder>/replay_buffer.pth.tar``
    atomically, stamped with the ``train_iter`` and ``env_step`` of the ckpt_last written with it; returns the path."""
    from ding_lite.data.buffer_io import buffer_content
    path = os.path.join(ckpt_folder, REPLAY_BUFFER_FILE)
    atomic_torch_save({"counters": {"train_iter": int(counters["train_iter"]), "env_step": int(counters["env_step"])},
                       "buffer": buffer_content(buffer)}, path)
    return path


def load_replay_buffer(buffer: Any, counters: Mapping[str, Any], ckpt_folder: str) -> str:
    """Fill ``buffer`` from ``<ckpt_folder>/replay_buffer.pth.tar`` when it was written with the checkpoint resumed
    from (same ``train_iter`` and ``env_step``); returns what happened, for the log. A missing file or one of
    another checkpoint leaves the buffer empty (said in the returned line); an unreadable one is a ``UserError``."""
    from ding_lite.data.buffer_io import load_buffer_content
    path = os.path.join(ckpt_folder, REPLAY_BUFFER_FILE)
    if not os.path.isfile(path):
        return f"replay buffer: no {path}; starting with an empty buffer"
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise UserError(f"replay buffer '{path}' cannot be read ({type(err).__name__}: {error_summary(err)}); delete "
                        f"it to resume with an empty buffer") from None
    at = (int(counters["train_iter"]), int(counters["env_step"]))
    saved_at = (saved["counters"]["train_iter"], saved["counters"]["env_step"])
    if saved_at != at:
        return (f"replay buffer: {path} is from train_iter {saved_at[0]:,}, env_step {saved_at[1]:,}, not from the "
                f"checkpoint resumed from (train_iter {at[0]:,}, env_step {at[1]:,}); starting with an empty buffer")
    load_buffer_content(buffer, saved["buffer"], where=f"replay buffer '{path}'")
    return f"replay buffer: {len(buffer):,} samples loaded from {path}"


def resume_replay_buffer(buffer: Any, buffer_cfg: Mapping[str, Any], counters: Mapping[str, Any],
                         ckpt_folder: str) -> Optional[str]:
    """The replay buffer of a resumed run, and the line its log gets: loaded from the checkpoints when the run saves
    it (``save_replay_buffer``, :func:`load_replay_buffer`), else left empty, which the line says where samples would
    have outlived an update (replay: SAC then trains on its new samples only, with no second warm-up). None where
    nothing is worth saying (PPO's buffer, ``max_staleness=0``, holds nothing past an update)."""
    if buffer_cfg.get("save_replay_buffer"):
        return load_replay_buffer(buffer, counters, ckpt_folder)
    if buffer_cfg.get("max_staleness") == 0:
        return None
    return ("replay buffer: starting empty, as the checkpoints do not hold it (policy.other.replay_buffer."
            "save_replay_buffer=False); updates resume once it holds a batch, on the new samples only. Set "
            "save_replay_buffer=True for runs you resume")

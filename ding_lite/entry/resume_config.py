"""The config of a resumed run: the run's own, with the overrides of this resume on top, and the record of both.

``--resume`` continues a run with the config it ran with, its ``total_config.py`` (read as literals, never run:
``ding_lite/config/literal.py``). The ``-c`` file and ``--exp-name``/``-s`` name the run (its directory
``<exp_name>_seed<N>``); the ``-c`` file's values are not applied, and where they differ from the run's a line says
which keys and how to change them (``--set``). ``--set`` overrides apply on top of the run's config. Once the checkpoint
is restored, ``total_config.py`` is rewritten (atomically) with what this resume runs, and one JSON line is appended to
``resume_overrides.jsonl`` beside it: the time, the overrides, the checkpoint and counters resumed from, and the keys
of the ``-c`` file that were not applied.
"""
import datetime
import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

from easydict import EasyDict

from ding_lite.config import compile_config, save_config_py
from ding_lite.config.literal import named_modules, read_run_config
from ding_lite.utils import UserError
from ding_lite.utils.dict_tools import to_plain
from ding_lite.utils.file_io import io_error

from .build import ConfigInput, compile_input
from ding_lite.run.run_dir import run_dir_name

RECORD_NAME = "resume_overrides.jsonl"
# Sections and keys that name a network endpoint (a tracker's server and account, a Ray cluster, which speaks
# pickle): on resume they come from the user's own -c file and --set, never from the run directory.
ENDPOINT_KEYS = ("tracker", "parallel.ray_address")
# Keys a run fills in from its env (or the machine) after compiling: a fresh compile leaves them None / 'auto'.
RUNTIME_FILLED = ("policy.action_space", "policy.model.obs_shape", "policy.model.obs_space",
                  "policy.model.action_shape", "policy.model.action_space", "parallel.collector_num",
                  "parallel.queue_size")


def _flat(tree: Any, prefix: str = "") -> Dict[str, Any]:
    if not isinstance(tree, dict) or not tree:
        return {prefix: tree}
    out: Dict[str, Any] = {}
    for key, value in tree.items():
        out.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def config_differences(given: EasyDict, run: EasyDict) -> List[str]:
    """The keys whose value in ``given`` (the ``-c`` file compiled) differs from the run's own config; keys the run
    filled in from its env are left out where ``given`` leaves them to the env."""
    flat_given, flat_run = _flat(to_plain(given)), _flat(to_plain(run))
    out = []
    for key in sorted(set(flat_given) | set(flat_run)):
        value = flat_given.get(key, None)
        if flat_run.get(key, None) == value and (key in flat_run) == (key in flat_given):
            continue
        if any(key == k or key.startswith(k + ".") for k in RUNTIME_FILLED) and value in (None, "auto"):
            continue
        out.append(key)
    return out


def resume_config(input_cfg: ConfigInput, seed: Optional[int], overrides: Any, exp_name: Optional[str],
                  trust_config: bool = False) -> Tuple[EasyDict, List[str]]:
    """``(compiled config, keys of input_cfg not applied)`` of a resumed run (module docstring).

    ``input_cfg`` with ``seed`` and ``exp_name`` names the run; the run's total_config.py gives the config, with
    ``overrides`` on top. Modules the run's config names are imported only when ``input_cfg`` names them too (the
    user's own config) or with ``trust_config``.
    """
    given = compile_config(input_cfg, overrides=overrides, seed=seed, exp_name=exp_name)
    run_dir = run_dir_name(given.exp_name, given.seed)
    if not os.path.isdir(run_dir):
        raise UserError(f"--resume: run directory '{run_dir}' not found; run without --resume to start it")
    path = os.path.join(run_dir, "total_config.py")
    if not os.path.isfile(path):
        raise UserError(f"--resume: run '{run_dir}' has no total_config.py (the config it ran with), so it cannot "
                        f"be resumed; start a new run without --resume (or with another --exp-name)")
    own_modules = [module for module, _ in named_modules(to_plain(given), {})]
    run_input = read_run_config(path, trust_config, own_modules)
    cfg = compile_input(run_input, given.seed, overrides, given.exp_name)
    take_endpoints(cfg, given, run_dir)
    if cfg.policy.type != given.policy.type:  # another algorithm: the -c file names some other run
        raise UserError(f"--resume: run '{run_dir}' trains policy '{cfg.policy.type}' (its total_config.py) but the -c "
                        f"file configures '{given.policy.type}': name the run you mean (--exp-name, -s), or start a "
                        f"new run without --resume")
    return cfg, config_differences(given, cfg)


def _get(tree: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        tree = tree[key]
    return tree


def take_endpoints(cfg: EasyDict, given: EasyDict, run_dir: str) -> None:
    """Put ``given``'s (the user's -c file with --set) ``ENDPOINT_KEYS`` into ``cfg`` (the run's own config); a line
    on stderr names each that the run directory would have set otherwise."""
    for dotted in ENDPOINT_KEYS:
        *parents, last = dotted.split(".")
        mine, theirs = _get(given, dotted), _get(cfg, dotted)
        if to_plain(mine) != to_plain(theirs):
            print(f"ding_lite: --resume: {dotted} is {to_plain(mine)!r}, from your -c file and --set, not "
                  f"{to_plain(theirs)!r} from {run_dir}/total_config.py: a run directory never chooses the servers a "
                  f"resume contacts", file=sys.stderr, flush=True)
        target = _get(cfg, ".".join(parents)) if parents else cfg
        target[last] = EasyDict(to_plain(mine)) if isinstance(mine, dict) else mine


def pipeline_config(input_cfg: ConfigInput, seed: Optional[int], overrides: Any, exp_name: Optional[str],
                    resume: bool, trust_config: bool = False) -> Tuple[EasyDict, Optional[Dict[str, Any]]]:
    """A pipeline's ``(compiled config, resume record)``: ``input_cfg`` compiled for a fresh run (no record), or for
    ``resume`` the run's own config with the overrides (``resume_config``; the -c keys not applied are printed when
    the run opens, ``write_resume_record``)."""
    if not resume:
        return compile_input(input_cfg, seed, overrides, exp_name), None
    cfg, ignored = resume_config(input_cfg, seed, overrides, exp_name, trust_config)
    return cfg, resume_record(overrides, ignored)


def ignored_note(run_dir: str, keys: List[str]) -> str:
    """The line saying that the ``-c`` file's values at ``keys`` were not applied to the resumed run."""
    shown = ", ".join(keys[:8]) + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")
    return (f"ding_lite: --resume: the run continues with its own config ({run_dir}/total_config.py); the -c file "
            f"differs at {shown}; those values are not applied (to change a key on resume, pass --set KEY=VALUE)")


def resume_record(overrides: Any, ignored: List[str]) -> Dict[str, Any]:
    """What a resume records besides its counters: its overrides (as given) and the ``-c`` keys not applied."""
    if overrides is None:
        shown: Any = []
    elif isinstance(overrides, dict):
        shown = to_plain(overrides)
    else:
        shown = [str(item) for item in overrides]
    return {"overrides": shown, "config_file_not_applied": list(ignored)}


def write_resume_record(run_dir: str, cfg: EasyDict, record: Dict[str, Any], checkpoint: str, train_iter: int,
                        env_step: int) -> None:
    """Rewrite ``<run_dir>/total_config.py`` with ``cfg`` (atomically), append this resume's line to
    ``resume_overrides.jsonl`` (flushed and fsynced) and print ``ignored_note`` on stderr (the run's log is not open
    yet) when the -c file's values were not applied."""
    if record.get("config_file_not_applied"):
        print(ignored_note(run_dir, record["config_file_not_applied"]), file=sys.stderr, flush=True)
    save_config_py(cfg, os.path.join(run_dir, "total_config.py"))
    line = {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "checkpoint": os.path.relpath(checkpoint, run_dir), "train_iter": int(train_iter),
            "env_step": int(env_step), **record}
    path = os.path.join(run_dir, RECORD_NAME)
    try:
        torn = False  # a line cut short by a killed write: end it, so this one stands on its own
        if os.path.isfile(path) and os.path.getsize(path) > 0:
            with open(path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                torn = f.read(1) != b"\n"
        with open(path, "a", encoding="utf-8") as f:
            f.write(("\n" if torn else "") + json.dumps(line, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
    except OSError as err:
        raise io_error(err, "record the resume in", path) from None

"""``compile_config``: one complete, validated config from the components' defaults, the user's config and overrides.

Layers, later wins:
    1. the policy's ``default_config()``, with the model's defaults (its constructor's keyword arguments) under
       ``policy.model``;
    2. the env's and the env manager's defaults (``env``, ``env.manager``);
    3. the workers' and the replay buffer's defaults, under whatever the policy itself sets for those sections
       (``policy.collect.collector``, ``policy.eval.evaluator``, ``policy.learn.learner``,
       ``policy.other.replay_buffer``);
    4. the user's ``main_config``, with ``create_config``'s types and import_names at their sections;
    5. overrides (``--set`` strings or a dict), then the ``seed`` / ``exp_name`` arguments.

Nothing is built (no env, no model): keys and types of layers 4-5 are validated against layers 1-3, then every
component checks its own section's values. Every user mistake is a ``ConfigError`` (or the registry's error for an
unknown type) whose message starts with the full key path.
"""
import os
from typing import Any, List, Mapping, Optional, Tuple, Union

from easydict import EasyDict

from ding_lite.torch_utils.precision import MATMUL_PRECISIONS
from ding_lite.utils.dict_tools import deep_merge, to_plain
from ding_lite.utils.errors import ConfigError, UserError

from .create import check_create_config, place_types, resolve_types
from .defaults import BUILTIN_MODULES, SECTION_PATHS, build_defaults
from .overrides import normalize_overrides
from .save import save_config_py
from .validate import check_values, config_error, problem_key, validate_layer

ConfigInput = Union[Mapping, Tuple[Mapping, Mapping]]


def split_config(cfg: ConfigInput, create_cfg: Optional[Mapping] = None) -> Tuple[dict, dict]:
    """Plain-dict copies of ``(main_config, create_config)`` from ``cfg`` (main_config or that tuple) and
    ``create_cfg``."""
    if isinstance(cfg, (tuple, list)):
        if len(cfg) != 2:
            raise UserError(f"pass the config as main_config or as (main_config, create_config), got a "
                            f"{type(cfg).__name__} of {len(cfg)} items")
        if create_cfg is not None:
            raise UserError("create_config given twice: in the (main_config, create_config) tuple and as create_cfg")
        cfg, create_cfg = cfg
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"main_config must be a dict, got {type(cfg).__name__}")
    if create_cfg is None:
        create_cfg = {}
    check_create_config(create_cfg)
    return to_plain(cfg), to_plain(create_cfg)


def _set_path(tree: dict, path: Tuple[str, ...], key: str, value: Any) -> None:
    for part in path:
        tree = tree[part]
    tree[key] = value


def compile_config(cfg: ConfigInput, create_cfg: Optional[Mapping] = None,
                   overrides: Union[None, Mapping, list, tuple] = None, *, seed: Optional[int] = None,
                   exp_name: Optional[str] = None, save_path: Optional[str] = None) -> EasyDict:
    """The compiled config of a run, as an EasyDict with every key of every section (see the module docstring).

    ``cfg`` is ``main_config`` or ``(main_config, create_config)``; ``overrides`` a dict (nested or with dotted keys)
    or a list of ``'a.b.c=VALUE'`` strings. ``seed`` and ``exp_name`` win over both. With ``save_path`` (a ``.py``
    file, or a directory for ``total_config.py``) the result is also saved as a re-runnable config file.
    """
    main, create = split_config(cfg, create_cfg)
    override_tree, source = normalize_overrides(overrides)
    types = resolve_types(create, main, override_tree, source)
    place_types(main, create)
    defaults = build_defaults(types, main.get("policy", {}))
    policy_type = types["policy"][0]
    problems = validate_layer(main, defaults.tree, defaults.free_form, policy_type, shadowed=defaults.shadowed)
    problems += validate_layer(override_tree, defaults.tree, defaults.free_form, policy_type, source,
                               defaults.shadowed)

    merged = deep_merge(deep_merge(to_plain(defaults.tree), main), override_tree)
    for name, (kind, import_names) in defaults.types.items():
        _set_path(merged, SECTION_PATHS[name], "type", kind)
        _set_path(merged, SECTION_PATHS[name], "import_names", list(import_names))
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            problems.append(f"seed={seed!r}: expected int, got {type(seed).__name__}")
        else:
            merged["seed"] = seed
    if exp_name is not None:
        merged["exp_name"] = exp_name
    if not merged["exp_name"]:
        env_name = merged["env"]["env_id"] or merged["env"]["type"]  # 'minigrid:MiniGrid-...' -> 'MiniGrid-...'
        merged["exp_name"] = f"{env_name.rpartition(':')[2]}_{policy_type}"
    if not isinstance(merged["exp_name"], str):
        problems.append(f"exp_name={merged['exp_name']!r}: expected str, got {type(merged['exp_name']).__name__}")

    run_seed = merged.get("seed")
    if isinstance(run_seed, int) and not isinstance(run_seed, bool) and not 0 <= run_seed < 2 ** 32:
        problems.append(f"seed={run_seed}: must be in [0, 2**32) (gymnasium and NumPy seed with non-negative 32-bit "
                        f"integers); use e.g. -s {abs(run_seed) % 2 ** 32}")
    threads = merged["torch_threads"]
    if threads != "auto" and (isinstance(threads, str) or threads < 1):
        problems.append(f"torch_threads={threads!r}: must be 'auto' or a whole number >= 1")
    if merged["matmul_precision"] not in MATMUL_PRECISIONS:
        problems.append(f"matmul_precision={merged['matmul_precision']!r}: must be one of "
                        f"{', '.join(repr(p) for p in MATMUL_PRECISIONS)} (torch.set_float32_matmul_precision)")
    if merged["keep_freed_memory"] is not None and not isinstance(merged["keep_freed_memory"], bool):
        problems.append(f"keep_freed_memory={merged['keep_freed_memory']!r}: must be None (where an update asks for "
                        f"it), True or False")
    from ding_lite.run.trackers import check_tracker_config
    problems += check_tracker_config(merged["tracker"])
    compiled = EasyDict(merged)
    # On the rest, so one run names every problem; a key already refused above (a DI-engine value) is not named twice.
    refused = {problem_key(p) for p in problems}
    problems += [p for p in check_values(compiled, defaults.checkers) if problem_key(p) not in refused]
    if problems:
        raise config_error(problems)
    if save_path is not None:
        save_config_py(compiled, total_config_path(save_path))
    return compiled


def total_config_path(save_path: str) -> str:
    """``save_path`` itself when it names a ``.py`` file, else ``<save_path>/total_config.py``."""
    return save_path if save_path.endswith(".py") else os.path.join(save_path, "total_config.py")


def config_imports(cfg: Mapping) -> List[Tuple[List[str], str]]:
    """The modules a fresh process imports before it looks a type of compiled ``cfg`` up in a registry, as
    ``(module names, where they come from)``: ding_lite's own components, then every section's ``import_names``.

    A spawned process (a parallel collector, say) needs them: the registrations made while compiling happened in
    the parent process only."""
    imports = [(list(BUILTIN_MODULES), "ding_lite")]
    for path in SECTION_PATHS.values():
        section = cfg
        for key in path:
            section = section[key]
        imports.append((list(section["import_names"] or []), ".".join(path) + ".import_names"))
    return imports

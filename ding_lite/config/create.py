"""create_config: which registered components to build (``type``) and which modules register them (``import_names``).

Accepted shape (DI-engine's names; every section and key optional):

    create_config = dict(
        env=dict(type='gym', import_names=[]),
        env_manager=dict(type='base', import_names=[]),
        policy=dict(type='impala', import_names=[], model=dict(type='vac', import_names=[])),
        replay_buffer=dict(type='columnar', import_names=[]),
    )

``resolve_types`` combines it with the ``type``/``import_names`` keys of main_config and the overrides (override >
create_config > main_config) to decide, before anything is looked up, which class fills each section.
"""
from typing import Dict, List, Mapping, Optional, Tuple

from ding_lite.utils.errors import ConfigError
from ding_lite.utils.registry import ENV_REGISTRY, POLICY_REGISTRY, import_modules
from ding_lite.utils.suggest import did_you_mean

from .compat import (CREATE_CONFIG_SECTIONS, DI_ENGINE_BUFFER_TYPES, DI_ENGINE_MANAGER_TYPES,
                     DI_ENGINE_POLICY_TYPES, DIZOO_ENV_IDS, DIZOO_ENV_TYPES, IGNORED_KEYS, di_engine_modules)
from .defaults import DEFAULT_TYPES, SECTION_PATHS, import_builtins

# create_config section of each component.
CREATE_PATHS: Dict[str, Tuple[str, ...]] = {
    "policy": ("policy",),
    "model": ("policy", "model"),
    "env": ("env",),
    "manager": ("env_manager",),
    "buffer": ("replay_buffer",),
}
_SECTION_KEYS = ("type", "import_names")

Resolved = Dict[str, Tuple[Optional[str], List[str]]]


def _node(tree: Mapping, path: Tuple[str, ...], where: str, suffix: str = "") -> Mapping:
    """The mapping at ``path`` of ``tree`` ({} when absent); a non-mapping on the way is a ConfigError.

    ``where`` prefixes the key path in messages ('create_config' or ''), ``suffix`` names the source."""
    node = tree
    for depth, key in enumerate(path):
        node = node.get(key, {}) if isinstance(node, Mapping) else node
        if not isinstance(node, Mapping):
            name = ".".join((where,) + path[:depth + 1] if where else path[:depth + 1])
            raise ConfigError(f"{name}={node!r}: expected dict, got {type(node).__name__}{suffix}")
    return node


def check_create_config(create: Mapping) -> None:
    """Refuse unknown sections and keys of create_config (with DI-engine reasons where there are some)."""
    if not isinstance(create, Mapping):
        raise ConfigError(f"create_config must be a dict, got {type(create).__name__}")
    sections = {path[0] for path in CREATE_PATHS.values()}
    for key in create:
        if key in IGNORED_KEYS:
            continue
        if key in CREATE_CONFIG_SECTIONS:
            raise ConfigError(f"create_config.{key}: {CREATE_CONFIG_SECTIONS[key]}")
        if key not in sections:
            raise ConfigError(f"create_config.{key}: unknown section{did_you_mean(str(key), sections)}; "
                              f"create_config has {', '.join(sorted(sections))}")
    for name, path in CREATE_PATHS.items():
        where = "create_config." + ".".join(path)
        node = _node(create, path, "create_config")
        allowed = _SECTION_KEYS + (("model",) if name == "policy" else ())
        for key in node:
            if key not in allowed and key not in IGNORED_KEYS:
                raise ConfigError(f"{where}.{key}: unknown key{did_you_mean(str(key), allowed)}; a create_config "
                                  f"section holds only {' and '.join(allowed)}")


def _type_and_imports(node: Mapping, where: str, suffix: str) -> Tuple[Optional[str], Optional[List[str]]]:
    """``(type, import_names)`` given in one section (None where absent), checked for their types."""
    kind = node.get("type")
    if kind is not None and not isinstance(kind, str):
        raise ConfigError(f"{where}.type={kind!r}: expected str, got {type(kind).__name__}{suffix}")
    names = node.get("import_names")
    if names is not None:
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"{where}.import_names={names!r}: expected a list of module names (str){suffix}")
        names = list(names)
    return kind, names


def _policy_buffer_type(policy_type: Optional[str]) -> Optional[str]:
    """The buffer type a registered policy declares in its defaults (``other.replay_buffer.type``: IMPALA's 'fifo'),
    or None."""
    if policy_type is None or policy_type not in POLICY_REGISTRY:
        return None
    buffer = POLICY_REGISTRY.get(policy_type).default_config().get("other", {}).get("replay_buffer", {})
    return buffer.get("type")


def resolve_types(create: Mapping, main: Mapping, overrides: Mapping, override_source: str) -> Resolved:
    """component -> (registry type, import_names), by precedence overrides > create_config > main_config > default.

    DI-engine names that cannot work here (dizoo envs, ``ding.*`` modules, DI-engine buffer types) are refused with
    the fix. Whether a type is registered is left to the registry lookup.
    """
    import_builtins()
    resolved: Resolved = {}
    for name, path in SECTION_PATHS.items():
        sources = ((overrides, path, override_source), (create, CREATE_PATHS[name], "create_config"),
                   (main, path, "main_config"))
        kind, names, kind_from, names_from = None, None, None, None
        for tree, tree_path, label in sources:
            prefix = "create_config" if label == "create_config" else ""
            suffix = f" (from {label})" if label == override_source else ""
            node = _node(tree, tree_path, prefix, suffix)
            where = ".".join(((prefix,) if prefix else ()) + tree_path)
            node_kind, node_names = _type_and_imports(node, where, suffix)
            if kind is None and node_kind is not None:
                kind, kind_from = node_kind, f"{where}.type"
            if names is None and node_names is not None:
                names, names_from = node_names, f"{where}.import_names"
        foreign = di_engine_modules(names)
        if foreign and name == "env":
            raise ConfigError(_dizoo_env_message(names_from, kind, foreign))
        if foreign:
            raise ConfigError(f"{names_from}: {foreign[0]!r} is a DI-engine module; ding_lite's own components need "
                              f"no import_names, and a component of your own is imported from your module; remove it")
        import_modules(names or [], names_from or "import_names")
        if kind is None:
            kind = (name == "buffer" and _policy_buffer_type(resolved["policy"][0])) or DEFAULT_TYPES[name]
        _check_di_engine_type(name, kind, kind_from)
        resolved[name] = (kind, names or [])
    if resolved["policy"][0] is None:
        raise ConfigError("no policy type given: name it in create_config, e.g. create_config = "
                          "dict(policy=dict(type='impala')) (registered policies: "
                          f"{', '.join(POLICY_REGISTRY.keys()) or '(none)'})")
    return resolved


def _dizoo_env_message(where: str, kind: Optional[str], foreign: List[str]) -> str:
    if kind in DIZOO_ENV_TYPES:
        return f"{where}: {foreign[0]!r} is {DIZOO_ENV_TYPES[kind]}"
    env_id = DIZOO_ENV_IDS.get(str(kind))
    example = f"'{env_id}'" if env_id else "the gymnasium id of your env"
    return (f"{where}: {foreign[0]!r} is a DI-engine (dizoo) env module; ding_lite makes gymnasium envs by id: remove "
            f"create_config.env (its type defaults to 'gym') and set env.env_id={example} in main_config")


def _check_di_engine_type(name: str, kind: Optional[str], where: Optional[str]) -> None:
    """Refuse DI-engine type names that have a ding_lite equivalent, saying which."""
    if name == "buffer" and kind in DI_ENGINE_BUFFER_TYPES:
        raise ConfigError(f"{where}='{kind}': DI-engine's buffer types do not exist in ding_lite; its buffer "
                          f"'columnar' covers them (policy.other.replay_buffer: replay_buffer_size, max_use, "
                          f"max_staleness); set type='columnar' or remove it")
    if name == "manager" and kind in DI_ENGINE_MANAGER_TYPES:
        raise ConfigError(f"{where}='{kind}': ding_lite's env manager for this is "
                          f"'{DI_ENGINE_MANAGER_TYPES[kind]}'; use that")
    if name == "policy" and kind in DI_ENGINE_POLICY_TYPES and kind not in POLICY_REGISTRY:
        raise ConfigError(f"{where}='{kind}': ding_lite's name for this algorithm is "
                          f"'{DI_ENGINE_POLICY_TYPES[kind]}' (so is DI-engine's registered name); use that")
    if name == "env" and kind in DIZOO_ENV_TYPES and kind not in ENV_REGISTRY:
        raise ConfigError(f"{where}='{kind}' is {DIZOO_ENV_TYPES[kind]}")
    if name == "env" and kind in DIZOO_ENV_IDS and kind not in ENV_REGISTRY:
        raise ConfigError(f"{where}='{kind}' is a DI-engine (dizoo) env; ding_lite makes gymnasium envs by id: remove "
                          f"the env type (it defaults to 'gym') and set env.env_id='{DIZOO_ENV_IDS[kind]}' in "
                          f"main_config")


def place_types(main: dict, create: Mapping) -> None:
    """Copy create_config's ``type``/``import_names`` into ``main`` (a plain dict) at the compiled sections."""
    for name, path in SECTION_PATHS.items():
        node = _node(create, CREATE_PATHS[name], "create_config")
        for key in _SECTION_KEYS:
            if node.get(key) is not None:
                target = main
                for part in path:
                    target = target.setdefault(part, {})
                target[key] = list(node[key]) if key == "import_names" else node[key]


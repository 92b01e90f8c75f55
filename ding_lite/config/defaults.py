"""The defaults tree (layers 1-3 of ``compile_config``) built from the registered components' declared configs.

Each component lives at one section of the compiled config, found in its registry by the section's ``type``:

    policy                       POLICY_REGISTRY      (+ the model at policy.model, MODEL_REGISTRY)
    env                          ENV_REGISTRY         (default type 'gym')
    env.manager                  ENV_MANAGER_REGISTRY (default type 'base')
    policy.other.replay_buffer   BUFFER_REGISTRY      (default type 'columnar')

and the workers at policy.collect.collector, policy.eval.evaluator and policy.learn.learner; the parallel
pipeline's settings at parallel. The tree built here is both
the base the user's config is merged onto and the schema it is validated against.
"""
import copy
import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from easydict import EasyDict

from ding_lite.utils.dict_tools import Configurable, deep_merge, to_plain
from ding_lite.utils.registry import (BUFFER_REGISTRY, ENV_MANAGER_REGISTRY, ENV_REGISTRY, MODEL_REGISTRY,
                                      POLICY_REGISTRY, import_modules)

from .parallel import ParallelConfig

# Modules whose import registers ding_lite's built-in components.
BUILTIN_MODULES = ("ding_lite.envs", "ding_lite.model", "ding_lite.policy", "ding_lite.data", "ding_lite.worker")

# Model arguments the pipeline fills from the env (see entry/build.py ``resolve_env_spaces``). Their signature
# defaults are replaced by None in the compiled config: a concrete default (VAC's action_space='discrete') would read
# as the user's choice there and clash with a continuous env.
ENV_DERIVED_MODEL_KEYS = ("obs_shape", "obs_space", "action_shape", "action_space")

# Section of each component in the compiled config, and its default registry type (None: it has to be given).
SECTION_PATHS: Dict[str, Tuple[str, ...]] = {
    "policy": ("policy",),
    "model": ("policy", "model"),
    "env": ("env",),
    "manager": ("env", "manager"),
    "buffer": ("policy", "other", "replay_buffer"),
}
DEFAULT_TYPES: Dict[str, Optional[str]] = {"policy": None, "model": None, "env": "gym", "manager": "base",
                                           "buffer": "columnar"}


@dataclass
class Defaults:
    """The defaults tree, the free-form sections (absolute dotted paths) and the value checkers to run."""

    tree: dict
    # component -> (registry type, import_names) as used, the model's type filled in from the policy's default_model.
    types: Dict[str, Tuple[Optional[str], List[str]]]
    free_form: Set[str] = field(default_factory=set)
    # Dotted path -> defaults of lower layers that a higher one replaced (IMPALA's max_use=16 over the buffer's inf):
    # a value is of the right type if it fits the default or any of these.
    shadowed: Dict[str, list] = field(default_factory=dict)
    # (component class, dotted path of its section): ``cls.check_config(section, path)`` is called on the result.
    checkers: List[Tuple[Any, str]] = field(default_factory=list)


def import_builtins() -> None:
    """Import ding_lite's own components so their registry entries exist (lazily, to keep imports one-way)."""
    for module in BUILTIN_MODULES:
        importlib.import_module(module)


def _listify(value: Any) -> Any:
    """Signature defaults as config values: tuples become lists (the config format of sequences)."""
    if isinstance(value, (list, tuple)):
        return [_listify(v) for v in value]
    return value


def _config_of(cls: Any) -> Tuple[dict, tuple]:
    """``(default config, free_form)`` of a Configurable; ``({}, ())`` for anything else."""
    if isinstance(cls, type) and issubclass(cls, Configurable):
        return to_plain(cls.default_config()), tuple(cls.free_form)
    return {}, ()


def model_defaults(model_cls: Any) -> Tuple[dict, bool]:
    """Default model section of ``model_cls`` and whether its keys are free-form.

    A Configurable model declares its config; otherwise the keyword parameters of its constructor, with their
    defaults (None where there is none), are the keys. A constructor taking ``**kwargs`` makes the section free-form.
    """
    if isinstance(model_cls, type) and issubclass(model_cls, Configurable):
        return to_plain(model_cls.default_config()), bool(model_cls.free_form)
    section: dict = {}
    free = False
    for name, param in inspect.signature(model_cls).parameters.items():
        if param.kind is param.VAR_KEYWORD:
            free = True
        elif param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            default = None if param.default is param.empty else param.default
            section[name] = None if name in ENV_DERIVED_MODEL_KEYS else _listify(default)
    return section, free


def model_type_defaults(model_type: Optional[str]) -> Dict[str, Any]:
    """The default ``policy.model`` section of the registered model ``model_type`` ({} for a type not registered):
    what a checkpoint older than a model key was built with (``ding_lite.run.checkpoint.check_checkpoint_fits``)."""
    if model_type not in MODEL_REGISTRY:
        return {}
    return model_defaults(MODEL_REGISTRY.get(model_type))[0]


def policy_default_model(policy_cls: Any, policy_section: dict) -> Optional[Tuple[str, List[str]]]:
    """``policy_cls().default_model()`` without constructing a policy (no model, no optimiser, no env).

    ``default_model`` is an instance method; it runs on an instance made by ``__new__`` alone, whose ``_cfg`` is the
    policy section as configured so far. None when the policy names no default model.
    """
    policy = policy_cls.__new__(policy_cls)
    policy._cfg = EasyDict(policy_section)
    try:
        model_type, import_names = policy.default_model()
    except NotImplementedError:
        return None
    return model_type, list(import_names)


def _subsection(tree: dict, path: Tuple[str, ...]) -> dict:
    node = tree
    for key in path:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    return node


def _record_shadowed(base: dict, section: dict, prefix: str, shadowed: Dict[str, list]) -> None:
    for key, value in section.items():
        if key in base and isinstance(base[key], dict) and isinstance(value, dict):
            _record_shadowed(base[key], value, f"{prefix}.{key}", shadowed)
        elif key in base and base[key] is not None:
            shadowed.setdefault(f"{prefix}.{key}", []).append(base[key])


def _put_under(tree: dict, path: Tuple[str, ...], base: dict, shadowed: Dict[str, list]) -> None:
    """Make ``base`` (a component's defaults) the bottom layer of ``tree`` at ``path``: keys already there win."""
    section = _subsection(tree, path)
    _record_shadowed(base, section, ".".join(path), shadowed)
    merged = deep_merge(base, section)
    section.clear()
    section.update(merged)


def build_defaults(types: Dict[str, Tuple[Optional[str], List[str]]], user_policy: dict) -> Defaults:
    """Layers 1-3 for the components named in ``types`` (component -> (registry type, import_names)).

    ``user_policy`` (the user's policy section, unvalidated) only serves ``default_model``. Registry lookups of unknown
    types raise the registry's own error, which lists the registered names.
    """
    import_builtins()
    for _, import_names in types.values():
        import_modules(import_names)
    from ding_lite.worker import Evaluator, Learner, SampleCollector

    policy_type = types["policy"][0]
    policy_cls = POLICY_REGISTRY.get(policy_type)
    policy, policy_free = _config_of(policy_cls)
    policy.update(type=policy_type, import_names=list(types["policy"][1]))
    # Top-level keys: the run name (default '<env id>_<policy type>'), the seed, and torch's intra-op CPU threads
    # ('auto': 1 for narrow networks, the cores for wide ones; see ding_lite/torch_utils/threads.py; or an int), and
    # torch's float32 matmul precision ('highest': true float32; 'high' and 'medium' let torch use TF32 or bfloat16
    # inside float32 matmuls where the hardware has them, see docs/configs.md).
    # keep_freed_memory: glibc keeps freed memory for reuse (ding_lite/torch_utils/malloc.py; pixel learners; None:
    # where an update asks for it, SAC's compiled update on a CPU).
    # tracker: experiment trackers besides TensorBoard, all off (W&B, MLflow; ding_lite/run/trackers.py).
    from ding_lite.run.trackers import TRACKER_DEFAULTS
    tree: dict = {"exp_name": "", "seed": 0, "torch_threads": "auto", "matmul_precision": "highest",
                  "keep_freed_memory": None, "tracker": copy.deepcopy(TRACKER_DEFAULTS), "policy": policy}
    out = Defaults(tree, dict(types), free_form={f"policy.{p}" for p in policy_free},
                   checkers=[(policy_cls, "policy")], shadowed={"torch_threads": [1],  # 'auto' or an int
                                                                    "env.step_timeout_s": [None]})  # or None

    # Model: signature (or declared) defaults under the policy's own model section.
    model_type, model_imports = types["model"]
    if model_type is None:
        named = policy_default_model(policy_cls, deep_merge(to_plain(policy), user_policy))
        if named is not None:
            model_type = named[0]
            import_modules(named[1], f"default model of policy '{policy_type}'")
    if model_type is None:
        model, model_free = {}, True
    else:
        model_cls = MODEL_REGISTRY.get(model_type)
        model, model_free = model_defaults(model_cls)
        if hasattr(model_cls, "check_config"):  # models may check their arguments before anything is built
            out.checkers.append((model_cls, "policy.model"))
    model.update(type=model_type, import_names=list(model_imports))
    out.types["model"] = (model_type, list(model_imports))
    _put_under(tree, ("policy", "model"), model, out.shadowed)
    if model_free:
        out.free_form.add("policy.model")

    # Env, its manager.
    env_type, env_imports = types["env"]
    env_cls = ENV_REGISTRY.get(env_type)
    if not (isinstance(env_cls, type) and issubclass(env_cls, Configurable)):
        from ding_lite.envs import EnvConfig  # a plain gymnasium.Env subclass shares the common env section
        env_cls = EnvConfig
    env, env_free = _config_of(env_cls)
    env.update(type=env_type, import_names=list(env_imports))
    tree["env"] = env
    out.free_form.update(f"env.{p}" for p in env_free)
    out.checkers.append((env_cls, "env"))
    _add_component(out, ENV_MANAGER_REGISTRY.get(types["manager"][0]), "manager", types)

    # Workers and the buffer, under what the policy says for their sections.
    for cls, path in ((SampleCollector, "policy.collect.collector"), (Evaluator, "policy.eval.evaluator"),
                      (Learner, "policy.learn.learner")):
        _add_component(out, cls, path, None)
    _add_component(out, BUFFER_REGISTRY.get(types["buffer"][0]), "buffer", types)
    _add_component(out, ParallelConfig, "parallel", None)  # top-level section of -m parallel
    return out


def _add_component(out: Defaults, cls: Any, name: str, types: Optional[dict]) -> None:
    """Put ``cls``'s defaults under ``out.tree`` at its section (``name`` is a component name or a dotted path)."""
    path = SECTION_PATHS[name] if name in SECTION_PATHS else tuple(name.split("."))
    dotted = ".".join(path)
    section, free = _config_of(cls)
    if types is not None:
        section.update(type=types[name][0], import_names=list(types[name][1]))
    _put_under(out.tree, path, section, out.shadowed)
    out.free_form.update(f"{dotted}.{p}" for p in free)
    out.checkers.append((cls, dotted))

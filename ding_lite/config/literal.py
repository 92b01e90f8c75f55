"""Reading a run's ``total_config.py`` without running it: ``read_run_config``.

A run directory may come from someone else, and its ``total_config.py`` is a Python file: executing it (as ``-c``
does for the user's own config files) would run whatever it holds. ding_lite writes it as literals only (``save.py``),
so ``load``, ``export``, ``-m eval`` without ``-c`` and ``--resume`` read it with ``ast``: assignments of
``main_config`` and ``create_config`` whose values are dicts, lists, tuples, numbers, strings, bools and None, written
as literals or as the two calls the writer emits, ``dict(key=value, ...)`` and ``float('inf')`` / ``float('-inf')`` /
``float('nan')``. Any other statement, call, name, attribute, import or operator is refused with one line naming the
file, the line and the construct, and the switch that runs the file as Python instead (``trust_config=True`` in
Python, ``--trust-config`` on the command line).

The modules such a config names are imported when it compiles (``import_names`` of any section, the module of each
``env.wrappers`` item ``'module:Name'``, the package of an env id ``'package:id'``), and an import runs the module's
code: outside ding_lite and gymnasium they are refused too, unless the same switch allows them (or the caller passes
them as already trusted, e.g. the ones the user's own ``-c`` file names).
"""
import ast
import math
import os
import re
from typing import Any, Iterable, List, Mapping, Tuple

from ding_lite.utils.errors import UserError

from .loader import read_config_file

CONFIG_NAMES = ("main_config", "create_config")
FLOAT_WORDS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
SAFE_PACKAGES = ("ding_lite", "gymnasium")  # imported by ding_lite itself anyway

# The wrappers a run's config read as literals may name (``env.wrappers``, and any 'module:Name' nested in their
# kwargs): gymnasium's wrappers that only transform what passes through them, and ding_lite's own. Not gymnasium's
# RecordVideo (it writes files where its kwargs say), HumanRendering and the render ones (windows, frames),
# Transform* (they call a function) or the array-conversion ones; nothing else in either package, since any of their
# callables would be called as Name(env, **kwargs). A config of your own (-c) may name any wrapper.
SAFE_WRAPPERS = frozenset(
    [f"gymnasium.wrappers:{name}" for name in (
        "AtariPreprocessing", "ClipAction", "ClipReward", "DelayObservation", "DiscretizeAction",
        "DiscretizeObservation", "DtypeObservation", "FilterObservation", "FlattenObservation",
        "FrameStackObservation", "GrayscaleObservation", "MaxAndSkipObservation", "NormalizeObservation",
        "NormalizeReward", "OrderEnforcing", "PassiveEnvChecker", "RecordEpisodeStatistics", "RepeatAction",
        "RescaleAction", "RescaleObservation", "ReshapeObservation", "ResizeObservation", "StickyAction",
        "TimeAwareObservation", "TimeLimit")]
    + ["ding_lite.envs.toy.masked_cartpole:HideVelocity", "ding_lite.envs.bound_actions:BoundActions",
       "ding_lite.envs.mask_source:MaskFromEnv", "ding_lite.envs.atari:AtariPreprocess",
       "ding_lite.envs.atari:EpisodicLife"])
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")  # 'module.path:Name', the form a wrapper is named in
SWITCH = "trust_config=True (Python) or --trust-config (command line)"


class _NotLiteral(Exception):
    def __init__(self, node: ast.AST, what: str) -> None:
        super().__init__(what)
        self.node, self.what = node, what


def _describe(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every node of a parsed file
        text = type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _value(node: ast.AST) -> Any:
    """The value of a literal expression node; ``_NotLiteral`` at the first node that is not one."""
    if isinstance(node, ast.Constant):
        if node.value is None or isinstance(node.value, (bool, int, float, str)):
            return node.value
        raise _NotLiteral(node, f"the constant {_describe(node)}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
            and isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float):
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    if isinstance(node, ast.List):
        return [_value(item) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(item) for item in node.elts)
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise _NotLiteral(node, f"the ** unpacking in {_describe(node)}")
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "dict" and not node.args and all(kw.arg is not None for kw in node.keywords):
            return {kw.arg: _value(kw.value) for kw in node.keywords}
        if node.func.id == "float" and not node.keywords and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in FLOAT_WORDS:
            return FLOAT_WORDS[node.args[0].value]
        raise _NotLiteral(node, f"the call {_describe(node)}")
    kind = {ast.Name: "the name", ast.Attribute: "the attribute", ast.Call: "the call"}.get(type(node), "the expression")
    raise _NotLiteral(node, f"{kind} {_describe(node)}")


def parse_literal_config(path: str) -> Tuple[dict, dict]:
    """``(main_config, create_config)`` of the config file at ``path`` read as literals (module docstring), never
    executed; a UserError naming the file, the line and the construct when it holds anything else."""
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except OSError as err:
        raise UserError(f"cannot read '{path}': {err.strerror or err}") from None
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as err:
        raise UserError(f"{path}:{err.lineno}: syntax error ({err.msg}); a run's total_config.py is written by "
                        f"ding_lite as plain literals: this one was changed or is damaged") from None
    found: dict = {}
    try:
        for stmt in tree.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                continue  # a docstring or a string on its own: no effect
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and stmt.targets[0].id in CONFIG_NAMES:
                found[stmt.targets[0].id] = _value(stmt.value)
                continue
            raise _NotLiteral(stmt, f"the statement {_describe(stmt).splitlines()[0]}")
    except _NotLiteral as err:
        raise UserError(f"{path}:{getattr(err.node, 'lineno', '?')}: {err.what} is not a plain value (a run's config "
                        f"is read as literals only: main_config and create_config of dicts, lists, numbers, strings, "
                        f"bools and None), so it is not run; if you trust where this file comes from, run it as "
                        f"Python with {SWITCH}") from None
    if not isinstance(found.get("main_config"), dict):
        raise UserError(f"{path}: defines no main_config dict (a run's total_config.py assigns main_config = "
                        f"dict(...) and create_config = dict(...))")
    create = found.get("create_config") or {}
    if not isinstance(create, dict):
        raise UserError(f"{path}: create_config must be a dict, got {type(create).__name__}")
    return found["main_config"], create


def _import_names(tree: Any, where: str) -> Iterable[Tuple[str, str]]:
    if isinstance(tree, Mapping):
        for key, value in tree.items():
            here = f"{where}.{key}" if where else str(key)
            if key == "import_names" and isinstance(value, (list, tuple)):
                yield from ((str(name), here) for name in value)
            else:
                yield from _import_names(value, here)


def named_modules(main: Mapping, create: Mapping) -> List[Tuple[str, str]]:
    """``(module, where)`` for every module compiling or running the config imports: ``import_names`` of any
    section, the module of each ``env.wrappers`` item, the package of an ``env.env_id`` of the form 'package:id'."""
    out = list(_import_names(create, "create_config")) + list(_import_names(main, ""))
    env = main.get("env") if isinstance(main.get("env"), Mapping) else {}
    for i, item in enumerate(env.get("wrappers") or []):
        target = item.get("type") if isinstance(item, Mapping) else item
        if isinstance(target, str) and ":" in target:
            out.append((target.partition(":")[0], f"env.wrappers[{i}]"))
    env_id = env.get("env_id")
    if isinstance(env_id, str) and ":" in env_id:
        out.append((env_id.partition(":")[0], "env.env_id"))
    return out


def is_builtin_module(module: str) -> bool:
    """Whether ``module`` belongs to ding_lite or gymnasium (imported by ding_lite anyway)."""
    return any(module == pkg or module.startswith(pkg + ".") for pkg in SAFE_PACKAGES)


def foreign_modules(main: Mapping, create: Mapping, allowed: Iterable[str] = ()) -> List[Tuple[str, str]]:
    """The ``named_modules`` that are neither built in nor in ``allowed``, each once."""
    allowed, seen, out = set(allowed), set(), []
    for module, where in named_modules(main, create):
        if not is_builtin_module(module) and module not in allowed and module not in seen:
            seen.add(module)
            out.append((module, where))
    return out


def read_run_config(path: str, trust_config: bool = False, allowed_modules: Iterable[str] = ()) -> Tuple[dict, dict]:
    """``(main_config, create_config)`` of a run's config file ``path`` (its total_config.py).

    Without ``trust_config`` it is read as literals (``parse_literal_config``) and the modules it names outside
    ding_lite, gymnasium and ``allowed_modules`` are refused, listed in one line; with it the file runs as Python
    (``read_config_file``) and its modules are imported when it compiles.
    """
    if trust_config:
        main, create = read_config_file(path)
        return dict(main), dict(create)
    main, create = parse_literal_config(path)
    foreign = foreign_modules(main, create, allowed_modules)
    if foreign:
        listed = ", ".join(f"'{module}' ({where})" for module, where in foreign)
        raise UserError(f"{path} names modules that would be imported, which runs their code: {listed}; if you "
                        f"trust them (and where this run comes from), allow it with {SWITCH}")
    called = [(target, where) for target, where in named_callables(main)
              if target not in SAFE_WRAPPERS and is_builtin_module(target.partition(":")[0])
              and target.partition(":")[0] not in allowed_modules]
    if called:
        listed = ", ".join(f"'{target}' ({where})" for target, where in called)
        raise UserError(f"{path} names callables that would be called with the env, which are not among the wrappers "
                        f"a run's config may name (gymnasium's transforming wrappers and ding_lite's own): {listed}; "
                        f"if you trust where this run comes from, allow it with {SWITCH}")
    return main, create


def _nested_targets(value: Any, where: str) -> Iterable[Tuple[str, str]]:
    if isinstance(value, str) and _TARGET.match(value):
        yield value, where
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _nested_targets(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _nested_targets(item, f"{where}[{i}]")


def named_callables(main: Mapping) -> List[Tuple[str, str]]:
    """``(target, where)`` of every 'module:Name' the config's env would call: each ``env.wrappers`` item and any
    such string nested in an item's kwargs, at any depth."""
    env = main.get("env") if isinstance(main.get("env"), Mapping) else {}
    out = []
    for i, item in enumerate(env.get("wrappers") or []):
        out += list(_nested_targets(item, f"env.wrappers[{i}]"))
    return out


def run_config_path(run_dir: str) -> str:
    """``<run_dir>/total_config.py``."""
    return os.path.join(run_dir, "total_config.py")

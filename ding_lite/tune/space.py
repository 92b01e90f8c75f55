"""The search space: ``PATH=loguniform(a,b)``, ``uniform(a,b)``, ``int(a,b)``, ``choice([..])``, from ``--param``
or a config file's ``tune`` section; each path checked against the compiled config before the study starts.

A spec is parsed, never evaluated: its arguments go through ``ast.literal_eval``. The paths are checked by compiling
the config with the space's end values as overrides (``compile_config``), so a misspelt path gets the same one-line
did-you-mean as ``--set``, and a value of the wrong type (``int`` for a list) the same type error.
"""
import ast
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ding_lite.utils import ConfigError, UserError

KINDS = ("loguniform", "uniform", "int", "choice")
_SPEC = re.compile(r"^\s*(?P<kind>\w+)\s*\((?P<args>.*)\)\s*$", re.S)
EXAMPLE = "e.g. --param 'policy.learn.learning_rate=loguniform(1e-4,1e-2)'"


@dataclass(frozen=True)
class Param:
    """One dimension of the space: the dotted config ``path``, its ``kind`` and its arguments (``low, high`` or the
    ``choices``)."""
    path: str
    kind: str
    args: Tuple[Any, ...]

    def suggest(self, trial: Any) -> Any:
        """The value an Optuna ``trial`` samples for this dimension."""
        if self.kind == "loguniform":
            return trial.suggest_float(self.path, self.args[0], self.args[1], log=True)
        if self.kind == "uniform":
            return trial.suggest_float(self.path, self.args[0], self.args[1])
        if self.kind == "int":
            return trial.suggest_int(self.path, self.args[0], self.args[1])
        return trial.suggest_categorical(self.path, list(self.args))

    def end_values(self) -> List[Any]:
        """The values whose type and range the config must accept: both bounds, or every choice."""
        return list(self.args)

    def __str__(self) -> str:
        args = repr(list(self.args)) if self.kind == "choice" else ", ".join(repr(a) for a in self.args)
        return f"{self.path}={self.kind}({args})"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_spec(path: str, spec: str, where: str = "--param") -> Param:
    """The ``Param`` of ``path`` for ``spec`` (``loguniform(1e-4, 1e-2)``, ``uniform(0.9, 0.999)``, ``int(16, 128)``,
    ``choice([32, 64])``); a ``UserError`` of one line for anything else."""
    where = f"{where} {path}={spec}"
    path = path.strip()
    if not path or not all(part.strip() for part in path.split(".")):
        raise UserError(f"{where}: '{path}' is not a dotted key path like policy.learn.learning_rate")
    match = _SPEC.match(spec) if isinstance(spec, str) else None
    if match is None:
        raise UserError(f"{where}: expected KIND(ARGS) with KIND one of {', '.join(KINDS)}; {EXAMPLE}")
    kind, text = match.group("kind"), match.group("args")
    if kind not in KINDS:
        raise UserError(f"{where}: unknown kind '{kind}'; choose one of {', '.join(KINDS)}")
    try:
        args = ast.literal_eval(f"({text},)") if text.strip() else ()
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise UserError(f"{where}: the arguments must be literals (numbers, or a list for choice); {EXAMPLE}") \
            from None
    if kind == "choice":
        if len(args) != 1 or not isinstance(args[0], (list, tuple)) or not args[0]:
            raise UserError(f"{where}: choice takes one non-empty list, e.g. choice([32, 64, 128])")
        choices = tuple(args[0])
        if len(set(map(repr, choices))) != len(choices):
            raise UserError(f"{where}: a choice is repeated")
        return Param(path, kind, choices)
    if len(args) != 2 or not all(_number(a) for a in args):
        raise UserError(f"{where}: {kind} takes two finite numbers (low, high)")
    low, high = args
    if kind == "int" and not all(isinstance(a, int) for a in args):
        raise UserError(f"{where}: int takes two whole numbers (low, high)")
    if not low < high:
        raise UserError(f"{where}: low {low!r} must be below high {high!r}")
    if kind == "loguniform" and low <= 0:
        raise UserError(f"{where}: loguniform needs 0 < low (it samples the logarithm)")
    return Param(path, kind, (float(low), float(high)) if kind != "int" else (low, high))


def parse_params(items: Sequence[str], section: Mapping[str, Any] = ()) -> List[Param]:
    """The space from a config file's ``tune`` section (``{path: spec}``) and ``--param PATH=SPEC`` items (which win
    for the same path), in that order."""
    space: Dict[str, Param] = {}
    if section and not isinstance(section, Mapping):
        raise UserError(f"the config's tune section must be a dict of 'path': 'spec' strings, got "
                        f"{type(section).__name__}")
    for path, spec in dict(section or {}).items():
        if not isinstance(spec, str):
            raise UserError(f"tune section key '{path}': expected a spec string like 'loguniform(1e-4, 1e-2)', "
                            f"got {spec!r}")
        space[path] = parse_spec(path, spec, "tune section")
    for item in items:
        if "=" not in item:
            raise UserError(f"--param {item!r}: expected PATH=SPEC; {EXAMPLE}")
        path, spec = item.split("=", 1)
        param = parse_spec(path, spec)
        space[param.path] = param
    if not space:
        raise UserError(f"no search space: give --param PATH=SPEC ({EXAMPLE}) or a tune section in the config")
    return list(space.values())


def check_space(config: Any, params: Sequence[Param]) -> None:
    """Compile ``config`` with each end of each dimension as overrides: a misspelt path, or a range whose values the
    config refuses, is the ``ConfigError`` that ``--set`` gives (one line, with a did-you-mean)."""
    from ding_lite.config import compile_config
    rounds = max(len(p.end_values()) for p in params)
    for i in range(rounds):
        overrides = {p.path: p.end_values()[min(i, len(p.end_values()) - 1)] for p in params}
        try:
            compile_config(config, overrides=overrides)
        except ConfigError as err:
            raise ConfigError(str(err).replace("(from overrides)", "(from the search space)")) from None

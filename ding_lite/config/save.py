"""``save_config_py``: a compiled config written as ``total_config.py``, a config file that runs again with ``-c``.

The file defines ``main_config`` (every key, so the run does not depend on defaults that may change later) and
``create_config`` (the registry types and import_names of policy, model, env, env manager and buffer), laid out like
DI-engine's configs: ``dict(key=value, ...)``, one key per line where a section does not fit on one line.
"""
import keyword
import math
from typing import Any, Mapping, Tuple

from ding_lite.utils.dict_tools import to_plain
from ding_lite.utils.errors import ConfigError
from ding_lite.utils.file_io import atomic_write_text

from .create import CREATE_PATHS
from .defaults import SECTION_PATHS

WIDTH = 110
_INDENT = "    "


def _is_identifier(key: Any) -> bool:
    return isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key)


def _scalar(value: Any, path: str) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(value)
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if hasattr(value, "item") and hasattr(value, "dtype") and getattr(value, "ndim", None) == 0:
        return _scalar(value.item(), path)  # a numpy / torch scalar
    raise ConfigError(f"{path}={value!r}: a {type(value).__name__} cannot be written to total_config.py (only "
                      f"numbers, strings, bools, None, lists, tuples and dicts can); use one of those")


def _items(value: Any, path: str) -> Tuple[str, str, list]:
    """Opening bracket, closing bracket and item texts (without indentation) of a container."""
    if isinstance(value, Mapping):
        if all(_is_identifier(k) for k in value):
            return "dict(", ")", [(f"{k}=", v, f"{path}.{k}") for k, v in value.items()]
        return "{", "}", [(f"{_scalar(k, path)}: ", v, f"{path}.{k}") for k, v in value.items()]
    if isinstance(value, tuple):
        return "(", ")", [("", v, f"{path}[{i}]") for i, v in enumerate(value)]
    return "[", "]", [("", v, f"{path}[{i}]") for i, v in enumerate(value)]


def format_value(value: Any, indent: int = 0, path: str = "config", used: int = 0) -> str:
    """Python source for ``value``: one line when it fits in ``WIDTH`` columns (its line is indented by ``indent``
    and has ``used`` more columns before the value), else one item per line. Round-trips through ``exec`` for dicts,
    lists, tuples, numbers (inf and nan included), str, bool and None."""
    if not isinstance(value, (Mapping, list, tuple)):
        return _scalar(value, path)
    opening, closing, items = _items(value, path)
    if not items:
        return "dict()" if opening == "dict(" else opening + closing
    flat = [prefix + format_value(v, 0, p) for prefix, v, p in items]
    one_line = opening + ", ".join(flat) + ("," if opening == "(" and len(flat) == 1 else "") + closing
    if "\n" not in one_line and indent + used + len(one_line) + 1 <= WIDTH:
        return one_line
    pad = _INDENT * (indent // len(_INDENT) + 1)
    if opening in "([" and not any(isinstance(v, (Mapping, list, tuple)) for _, v, _ in items):
        lines = _fill([text + "," for text in flat], pad)  # a long sequence of scalars: as many per line as fit
    else:
        lines = [f"{pad}{prefix}{format_value(v, len(pad), p, len(prefix))}," for prefix, v, p in items]
    return opening + "\n" + "\n".join(lines) + "\n" + _INDENT * (indent // len(_INDENT)) + closing


def _fill(words: list, pad: str) -> list:
    lines, line = [], pad
    for word in words:
        if line != pad and len(line) + 1 + len(word) > WIDTH:
            lines.append(line)
            line = pad
        line += word if line == pad else " " + word
    return lines + [line]


def split_compiled(cfg: Mapping) -> Tuple[dict, dict]:
    """``(main_config, create_config)`` of a compiled config: types and import_names move to create_config."""
    main = to_plain(cfg)
    create: dict = {}
    for name, path in SECTION_PATHS.items():
        section = main
        for key in path:
            section = section[key]
        target = create
        for key in CREATE_PATHS[name]:
            target = target.setdefault(key, {})
        for key in ("type", "import_names"):
            target[key] = section.pop(key)
    return main, create


def config_source(cfg: Mapping) -> str:
    """The text of ``total_config.py`` for the compiled ``cfg``."""
    main, create = split_compiled(cfg)
    return (
        '"""Compiled ding_lite config (every key, defaults included). Run it again with:\n'
        '    ding_lite -m serial -c total_config.py\n"""\n'
        f"main_config = {format_value(main, 0, 'main_config', 14)}\n\n"
        f"create_config = {format_value(create, 0, 'create_config', 16)}\n"
    )


def save_config_py(cfg: Mapping, path: str) -> None:
    """Write the compiled ``cfg`` to ``path`` as a config file (atomically: a reader never sees half of it)."""
    atomic_write_text(config_source(cfg), path)

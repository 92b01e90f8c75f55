"""``read_config_file``: run a Python config file and take its ``main_config`` and ``create_config``.

A config file is plain Python (DI-engine's format), so it may compute values and import sibling modules: its directory
is on ``sys.path`` while it runs. Its mistakes (missing file, syntax error, an exception, no ``main_config``) become
one-line ``UserError``s that point at the file and line.
"""
import os
import runpy
import sys
import traceback
from typing import Mapping, Optional, Tuple

from ding_lite.utils.errors import UserError


def _error_line(err: BaseException, path: str) -> str:
    """'file:line' of the deepest frame of ``err``'s traceback in the config file (or its directory)."""
    directory = os.path.dirname(os.path.abspath(path))
    where = path
    for frame in traceback.extract_tb(err.__traceback__):
        if os.path.abspath(frame.filename) == os.path.abspath(path):
            where = f"{path}:{frame.lineno}"
        elif os.path.dirname(os.path.abspath(frame.filename)) == directory:
            where = f"{frame.filename}:{frame.lineno}"
    return where


def _run(path: str) -> dict:
    directory = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, directory)
    try:
        return runpy.run_path(path, run_name="__ding_lite_config__")
    except SyntaxError as err:
        text = (err.text or "").strip()
        shown = f": {text}" if text else ""
        raise UserError(f"{err.filename or path}:{err.lineno}: syntax error in config file ({err.msg}){shown}") from err
    except UserError:
        raise
    except Exception as err:  # the file's own code failed: name where, keep the chain for debugging
        raise UserError(f"config file '{path}' failed while running ({_error_line(err, path)}): "
                        f"{type(err).__name__}: {err}") from err
    finally:
        try:
            sys.path.remove(directory)
        except ValueError:
            pass


def _missing_main_config(path: str, names: dict) -> str:
    """The error for a file without ``main_config``; names the line to add when the DI-engine pattern is there."""
    name = os.path.basename(path)
    message = f"{name} defines no main_config; a config file defines main_config (and create_config) dicts"
    dicts = {k for k, v in names.items() if isinstance(v, Mapping) and not k.startswith("_")}
    creates = sorted(k for k in dicts if k.endswith("_create_config"))
    mains = sorted(k for k in dicts if k.endswith("_config") and k not in creates and k != "create_config")
    if len(mains) == 1 and len(creates) <= 1:
        lines = [f"main_config = {mains[0]}"]
        if creates and "create_config" not in names:
            lines.append(f"create_config = {creates[0]}")
        message += "; add " + " and ".join(f"`{line}`" for line in lines) + f" at the end of {name}"
    return message


def read_config_file(path: str) -> Tuple[Mapping, Mapping]:
    """``(main_config, create_config)`` defined by the Python config file at ``path`` (create_config defaults to {}).

    Raises ``UserError`` for a missing or non-.py file, a syntax error (with file:line), an exception while the file
    runs, or a file that defines no ``main_config`` dict.
    """
    if not os.path.exists(path):
        raise UserError(f"config file '{path}' not found")
    if os.path.isdir(path):
        raise UserError(f"config file '{path}' is a directory; pass the .py file that defines main_config")
    if not path.endswith(".py"):
        raise UserError(f"config file '{path}' is not a .py file; a config file is Python that defines main_config "
                        f"(and create_config) dicts")
    names = _run(path)
    if "main_config" not in names:
        raise UserError(_missing_main_config(path, names))
    main_config = names["main_config"]
    create_config: Optional[Mapping] = names["create_config"] if "create_config" in names else {}
    if not isinstance(main_config, Mapping):
        raise UserError(f"{os.path.basename(path)}: main_config must be a dict, got {type(main_config).__name__}")
    if create_config is None:
        create_config = {}
    if not isinstance(create_config, Mapping):
        raise UserError(f"{os.path.basename(path)}: create_config must be a dict, got {type(create_config).__name__}")
    return main_config, create_config

"""Configs: defaults layering and validation (compile_config), config files (read/save), --set overrides."""
from .compile import compile_config, config_imports
from .loader import read_config_file
from .overrides import parse_overrides
from .save import save_config_py

__all__ = ["compile_config", "config_imports", "parse_overrides", "read_config_file", "save_config_py"]

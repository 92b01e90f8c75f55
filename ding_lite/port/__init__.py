"""``ding_lite port``: DI-engine config files rewritten as ding_lite config files, each change a comment.

``porter`` ports one file (``port_file``, ``port_config``, ``render``), ``carry`` and ``ppo`` the per-algorithm
rewrites, ``tree`` the editable config tree the port writes, ``walk`` a whole dizoo tree (``--walk``) and ``table``
the key table of docs/porting_from_dingengine.md. The compatibility tables the port reads (which DI-engine keys
ding_lite takes, moves or refuses) are ``ding_lite.config.compat``: config validation reads them too.
"""
from .porter import TODO, default_out, port_config, port_file, render, report

__all__ = ["TODO", "default_out", "port_config", "port_file", "render", "report"]

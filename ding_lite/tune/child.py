"""A trial's process: the ``ding_lite`` command line (``python -m ding_lite.tune.child -m serial -c ...``) in a
process that ends with the tune process that started it, even when that one is killed with ``kill -9``
(``ding_lite.utils.parent_death``), so an interrupted study leaves no trial running on its own.

The CLI is run by its module name, as ``python -m ding_lite.cli`` would: ``tune`` sits below ``cli`` in the
layering (the CLI imports it) and never imports it.
"""
import runpy

from ding_lite.utils.parent_death import die_with_parent

if __name__ == "__main__":
    die_with_parent()
    runpy.run_module("ding_lite.cli", run_name="__main__", alter_sys=True)

"""Hyperparameter search on Optuna (``ding_lite tune``; the optional extra ``tune``): a search space over config
paths (``space.py``), one ordinary run per trial and seed in a process of its own (``trial.py``, ``child.py``), the
study in a database (``study.py``) and its results (``results.py``). Optuna is imported only when a study runs."""
from .space import Param, check_space, parse_params, parse_spec

__all__ = ["Param", "check_space", "parse_params", "parse_spec"]

"""Learning-rate schedules (``policy.learn.lr_scheduler``): a multiplier of every optimiser's base learning rates
that is a pure function of the run's counters (``train_iter`` or ``env_step``).

    m(t) = 1                                              constant (the default, None: today's behaviour)
    m(t) = 1 - (1 - min_lr_ratio) * p                     linear
    m(t) = min_lr_ratio + (1 - min_lr_ratio) * (1 + cos(pi p)) / 2     cosine (half a period)
    with p = min(t / steps, 1): m(0) = 1, m(steps) = min_lr_ratio, constant after.

The update that takes ``train_iter`` from t to t + 1 uses m at (t, the env steps counted so far). Because m depends
on the counters only, and the counters are in every checkpoint, a resumed run continues the schedule where it left
off with nothing else saved; the learning rates an optimiser's state dict carries are overwritten before the next
update.

DI-engine's PPO form ``lr_scheduler=dict(epoch_num=N, min_lr_lambda=r)`` (a linear decay over N learner
iterations down to r) is read as ``dict(type='linear', over='train_iter', steps=N, min_lr_ratio=r)``.
"""
import math
import numbers
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence

import torch

from ding_lite.utils.errors import ConfigError
from ding_lite.utils.suggest import closest

SCHEDULE_TYPES = ("constant", "linear", "cosine")
COUNTERS = ("train_iter", "env_step")
KEYS = ("type", "over", "steps", "min_lr_ratio")
DI_ENGINE_KEYS = {"epoch_num": "steps", "min_lr_lambda": "min_lr_ratio"}  # DI-engine's PPO name -> ding_lite's

EXAMPLE = "dict(type='cosine', over='env_step', steps=100000, min_lr_ratio=0.1)"


def lr_multiplier(kind: str, t: float, steps: float, min_lr_ratio: float) -> float:
    """The multiplier of the base learning rate at counter value ``t`` (see the module docstring)."""
    if kind == "constant":
        return 1.0
    p = min(max(t, 0) / steps, 1.0)
    if kind == "linear":
        return 1.0 - (1.0 - min_lr_ratio) * p
    if kind == "cosine":
        return min_lr_ratio + (1.0 - min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * p))
    raise ValueError(f"unknown schedule type {kind!r}; one of {SCHEDULE_TYPES}")


@dataclass(frozen=True)
class LRSchedule:
    """A checked ``policy.learn.lr_scheduler``."""

    type: str = "constant"
    over: str = "train_iter"
    steps: int = 1
    min_lr_ratio: float = 0.0

    @property
    def constant(self) -> bool:
        return self.type == "constant"

    def multiplier(self, train_iter: int, env_step: int) -> float:
        return lr_multiplier(self.type, train_iter if self.over == "train_iter" else env_step, self.steps,
                             self.min_lr_ratio)


def parse_lr_scheduler(value: Any, path: str = "policy.learn.lr_scheduler") -> Optional[LRSchedule]:
    """The schedule ``value`` describes (None for None or type 'constant'), or a ConfigError naming the key path and
    the fix. ``value`` is None or a dict with ding_lite's keys (``type``, ``over``, ``steps``, ``min_lr_ratio``) or
    DI-engine's PPO keys (``epoch_num``, ``min_lr_lambda``)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        hint = (f"; on the command line set it key by key (--set {path}.type=cosine --set {path}.steps=100000) or "
                f"as a dict literal (--set \"{path}={{'type': 'cosine', 'steps': 100000}}\")"
                if isinstance(value, str) else "")
        raise ConfigError(f"{path}={value!r}: must be None (a constant learning rate) or a dict such as "
                          f"{EXAMPLE}{hint}")
    spec = dict(value)
    for old, new in DI_ENGINE_KEYS.items():
        if old in spec:
            if new in spec:
                raise ConfigError(f"{path}: both {old} (DI-engine's name) and {new} are set; keep only {new}")
            spec[new] = spec.pop(old)
            spec.setdefault("type", "linear")  # DI-engine's PPO schedule is linear
    for key in spec:
        if key not in KEYS:
            near = closest(str(key), list(KEYS) + list(DI_ENGINE_KEYS))
            hint = f"did you mean {path}.{near}?" if near else f"valid keys: {', '.join(KEYS)}"
            raise ConfigError(f"{path}.{key}: unknown key; {hint}")
    kind = spec.get("type", "linear" if "steps" in spec else "constant")
    if kind is None:
        kind = "constant"
    if kind not in SCHEDULE_TYPES:
        raise ConfigError(f"{path}.type={kind!r}: unknown schedule; use one of "
                          f"{', '.join(repr(t) for t in SCHEDULE_TYPES)} (or {path}=None for a constant rate)")
    over = spec.get("over", "train_iter")
    if over not in COUNTERS:
        raise ConfigError(f"{path}.over={over!r}: must be 'train_iter' (learner updates) or 'env_step' (env steps "
                          f"collected)")
    if kind == "constant":
        return None
    if "steps" not in spec:
        raise ConfigError(f"{path}.steps: missing; set the number of {over} over which the learning rate decays, "
                          f"e.g. {EXAMPLE}")
    steps = spec["steps"]
    if isinstance(steps, float) and steps.is_integer():
        steps = int(steps)
    if not isinstance(steps, numbers.Integral) or isinstance(steps, bool) or steps < 1:
        raise ConfigError(f"{path}.steps={steps!r}: must be an integer >= 1 (the {over} at which the learning rate "
                          f"reaches min_lr_ratio times its base)")
    ratio = spec.get("min_lr_ratio", 0.0)
    if (not isinstance(ratio, numbers.Real) or isinstance(ratio, bool) or not math.isfinite(ratio)
            or not 0 <= ratio <= 1):
        raise ConfigError(f"{path}.min_lr_ratio={ratio!r}: must be a number in [0, 1] (the final learning rate as a "
                          f"fraction of the base one; 0 decays to zero, 1 keeps it constant)")
    return LRSchedule(kind, over, int(steps), float(ratio))


class LRScheduler:
    """Sets every parameter group's learning rate of ``optimizers`` to its base rate (the one it had when this
    object was made) times the schedule's multiplier at the given counters."""

    def __init__(self, schedule: LRSchedule, optimizers: Sequence[torch.optim.Optimizer]) -> None:
        self.schedule = schedule
        self.optimizers = list(optimizers)
        self.base_lrs: List[List[float]] = [[group["lr"] for group in opt.param_groups] for opt in self.optimizers]
        self.multiplier = 1.0

    def step(self, train_iter: int, env_step: int) -> float:
        """Set the learning rates for the update at these counters; returns the multiplier."""
        m = self.schedule.multiplier(train_iter, env_step)
        self.multiplier = m
        for opt, bases in zip(self.optimizers, self.base_lrs):
            for group, base in zip(opt.param_groups, bases):
                group["lr"] = base * m
        return m

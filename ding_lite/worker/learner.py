"""Learner: runs the policy's learn mode on batches, counts iterations, averages the logged scalars and stops training
at the first NaN or infinity among them (or a gradient norm)."""
import math
from collections import defaultdict
from typing import Any, Dict, List, Optional, Sequence

import torch
from easydict import EasyDict

from ding_lite.policy.base_policy import LearnMode
from ding_lite.torch_utils.threads import ThreadTuner
from ding_lite.utils import Configurable, ConfigError, NonFiniteError

NON_FINITE_ADVICE = ("lower the learning rate, check the env's rewards and observations for NaN or huge values, or "
                     "enable gradient clipping where the policy has it (policy.learn.grad_clip_type)")


def to_floats(values: Sequence[Any]) -> List[float]:
    """Scalars (0-dim tensors, numbers) as Python floats, with one device-to-host transfer per device, not one per
    tensor: the learner reads every update's scalars, and each ``float(tensor)`` on a GPU waits for the device."""
    out: List[Any] = list(values)
    by_device: Dict[torch.device, List[int]] = defaultdict(list)
    for i, value in enumerate(out):
        if isinstance(value, torch.Tensor):
            by_device[value.device].append(i)
        else:
            out[i] = float(value)
    with torch.no_grad():
        for indices in by_device.values():
            stacked = torch.stack([out[i] if out[i].dim() == 0 else out[i].reshape(()) for i in indices]).tolist()
            for i, value in zip(indices, stacked):
                out[i] = float(value)
    return out


class Learner(Configurable):
    """Trains the policy on batches (config section ``policy.learn.learner``)."""

    config = dict(
        # (bool) After every update, check the logged loss terms and gradient norms; stop the run with a
        # NonFiniteError at the first NaN or infinity (the last good checkpoint is kept).
        check_finite=True,
        hook=dict(
            # (int) Write a progress line and TensorBoard scalars every this many train iterations.
            log_show_after_iter=100,
            # (int) Write ckpt/iteration_<N>.pth.tar every this many train iterations (0 disables).
            save_ckpt_after_iter=10000,
            # (float) Refresh ckpt/ckpt_last.pth.tar at least every this many seconds of training (0 disables), so a
            # run killed without warning (SIGKILL, OOM, power loss) loses at most this much; --resume starts there.
            save_ckpt_last_every_s=60.0,
            # (int) Refresh ckpt/ckpt_last.pth.tar every this many train iterations as well (0 disables).
            save_ckpt_last_after_iter=10000,
            # (bool) Write ckpt/ckpt_last.pth.tar when the run ends (also on Ctrl-C).
            save_ckpt_after_run=True,
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        if cfg.hook.log_show_after_iter < 1:
            raise ConfigError(f"{path}.hook.log_show_after_iter={cfg.hook.log_show_after_iter}: must be at least 1")
        for key in ("save_ckpt_after_iter", "save_ckpt_last_every_s", "save_ckpt_last_after_iter"):
            if cfg.hook[key] < 0:
                raise ConfigError(f"{path}.hook.{key}={cfg.hook[key]}: must be >= 0 (0 disables it)")

    def __init__(self, policy: LearnMode, train_iter: int = 0, check_finite: bool = True,
                 threads: Optional[ThreadTuner] = None) -> None:
        self.policy = policy
        self.threads = threads  # torch_threads='auto' on several cores: the thread count, chosen by timing updates
        self.train_iter = train_iter
        self.env_step = 0  # the run's env steps, set by the training loop: a learning-rate schedule may follow them
        self._set_counters = getattr(policy, "set_counters", None)  # None: constant learning rates
        self.check_finite = check_finite
        self._sums: Dict[str, float] = defaultdict(float)
        self._counts: Dict[str, int] = defaultdict(int)  # a scalar may be returned by some updates only
        self._count = 0

    def train(self, batch: Dict, env_step: Optional[int] = None) -> Dict[str, Any]:
        """One update; the monitored scalars are accumulated for ``pop_means``. With ``check_finite``, a NaN or
        infinite loss term or gradient norm raises ``NonFiniteError`` here, after the update (``train_iter`` counts
        it) and before anything else runs. ``env_step`` (the run's env steps so far, kept as ``self.env_step``) and
        ``train_iter`` set the learning rates of the policy's schedule for this update, if it has one."""
        if env_step is not None:
            self.env_step = env_step
        if self._set_counters is not None:
            self._set_counters(self.train_iter, self.env_step)
        info = self.policy.forward(batch) if self.threads is None else self.threads.run(self.policy.forward, batch)
        self.train_iter += 1
        keys = [k for k in self.policy.monitor_vars() if k in info]
        n_monitored = len(keys)
        if self.check_finite:  # every gradient norm is checked, logged or not
            keys += [k for k in info if k.startswith("grad_norm") and k not in keys]
        values = to_floats([info[k] for k in keys])
        if self.check_finite:
            self._raise_if_non_finite(keys, values)
        for key, value in zip(keys[:n_monitored], values):
            self._sums[key] += value
            self._counts[key] += 1
        self._count += 1
        return info

    def _raise_if_non_finite(self, keys: Sequence[str], values: Sequence[float]) -> None:
        """The first NaN or infinity, named with its key, its value and the update that produced it."""
        if all(map(math.isfinite, values)):
            return
        key, value = next((k, v) for k, v in zip(keys, values) if not math.isfinite(v))
        it = self.train_iter
        raise NonFiniteError(
            f"non-finite {key}={value} in update {it} (train_iter {it - 1} -> {it}; checkpoints up to train_iter "
            f"{it - 1} are from before it): {NON_FINITE_ADVICE}; policy.learn.learner.check_finite=False turns "
            f"this check off")

    def pop_means(self) -> Optional[Dict[str, float]]:
        """Means of the monitored scalars since the last call, each over the updates that returned it (None if no
        update ran)."""
        if not self._count:
            return None
        means = {k: v / self._counts[k] for k, v in self._sums.items()}
        self._sums, self._counts, self._count = defaultdict(float), defaultdict(int), 0
        return means

"""SAC's temperatures: one target entropy per alpha, checked against the entropies the policy can have, and the range
[``min_log_alpha``, ``max_log_alpha``] that log(alpha) is kept in.

alpha is tuned until the policy's entropy equals the target, so a target outside the range of entropies the policy
can have moves alpha one way for ever: towards 0 when the policy stays above it, without bound when it stays below.

* a discrete part with n choices has an entropy in [0, log n]: its target must lie in (0, log n). DI-engine's
  discrete SAC defaults to the continuous heuristic -|A|, a negative target; here it is refused.
* a continuous part (a tanh-squashed Gaussian on [-1, 1]^D) has an entropy below D * 0.6836 (``rl_utils.sac.
  SQUASHED_GAUSSIAN_MAX_ENTROPY``) and above any bound: targets at or above that are refused; one below the entropy
  of the narrowest Gaussian the actor can output (``model.log_std_min``) is allowed with a warning, as it can only be
  met by saturating the tanh (actions pinned at the bounds).

With an action mask (discrete SAC, ``env.action_mask_key``) a state with n(s) valid actions has an entropy in
[0, log n(s)]: a target of a Discrete(n) part applies per state as the same fraction of that state's maximum,
H_target(s) = H_target * log n(s) / log n (:func:`masked_target_entropy`; without a mask n(s) = n, unchanged). A
fixed target would lie at or above log n(s) wherever few actions are valid (the default 0.5 log 4 = log 2 is the
maximum of a state with two valid moves), and alpha would grow there for ever; a state with one valid action gets
the target 0, its entropy, and moves alpha neither way.

``learn.target_entropy`` is None (every part's default), a number (an action with one part), or one value per
part: ``[discrete, continuous]`` (ALF's order, that of ``model.log_alpha``) or ``dict(discrete=..., continuous=...)``;
a None entry or a missing key keeps that part's default.
"""
import math
import numbers
import warnings
from typing import Any, Dict, List, Mapping, Optional

import torch
from easydict import EasyDict

from ding_lite.rl_utils import sac as S
from ding_lite.utils import ConfigError

HEADS = ("discrete", "continuous")
_FORMS = ("None (each part's default), a number, [discrete, continuous] or dict(discrete=..., continuous=...) "
          "(None entries keep that part's default)")


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _given(value: Any, defaults: Optional[Dict[str, float]], path: str) -> Dict[str, Any]:
    """``{head: (dotted path of the entry, value or None)}`` of a ``target_entropy`` setting, for the parts of the
    action, ``defaults`` ``{head: default target}`` (None: not known yet, only the form is checked)."""
    heads = None if defaults is None else tuple(defaults)
    if value is None:
        return {}
    if _is_number(value):
        if heads is not None and len(heads) > 1:
            raise ConfigError(f"{path}={value}: a mixed action has one temperature per part, [discrete, continuous]; "
                              f"give one target per part, e.g. {path}=[{defaults['discrete']:.3g}, {value}] (the "
                              f"discrete default first) or dict(continuous={value}) (a missing part keeps its "
                              f"default), or None for the defaults {[round(d, 3) for d in defaults.values()]}")
        return {h: (path, value) for h in heads or HEADS[:1]}
    if isinstance(value, (list, tuple)) and all(v is None or _is_number(v) for v in value):
        if heads is not None and len(value) != len(heads):
            raise ConfigError(f"{path}={list(value)!r}: expected {len(heads)} value(s), one per part "
                              f"{list(heads)} of the action")
        if len(value) not in (1, 2):
            raise ConfigError(f"{path}={list(value)!r}: expected one value per part of the action, "
                              f"[discrete, continuous] for a mixed one")
        return {h: (f"{path}[{i}]", v) for i, (h, v) in enumerate(zip(heads or HEADS, value))}
    if isinstance(value, Mapping) and all(v is None or _is_number(v) for v in value.values()):
        valid = heads or HEADS
        for key in value:
            if key not in valid:
                raise ConfigError(f"{path}.{key}: unknown part of the action; the parts are {list(valid)}")
        return {h: (f"{path}.{h}", v) for h, v in value.items()}
    raise ConfigError(f"{path}={value!r}: must be {_FORMS}")


def check_temperature_config(learn: EasyDict, path: str) -> None:
    """The parts of the temperature settings of the learn section at ``path`` that need no env: the form of
    ``target_entropy``, ``min_log_alpha < max_log_alpha``, and an initial ``alpha`` inside them when tuned."""
    _given(learn.target_entropy, None, f"{path}.target_entropy")
    low, high = learn.min_log_alpha, learn.max_log_alpha
    if not _is_number(low):
        raise ConfigError(f"{path}.min_log_alpha={low!r}: must be a number (the floor of log alpha)")
    if high is not None and high <= low:
        raise ConfigError(f"{path}.max_log_alpha={high}: must be above {path}.min_log_alpha={low}")
    if learn.auto_alpha and not low <= math.log(learn.alpha) <= (math.inf if high is None else high):
        bounds = f"[exp({low}), exp({high})] = [{math.exp(low):.3g}, {math.exp(high):.3g}]" if high is not None \
            else f"exp({low}) = {math.exp(low):.3g}"
        raise ConfigError(f"{path}.alpha={learn.alpha}: the initial alpha must lie within {bounds}, the bounds of "
                          f"{path}.min_log_alpha / max_log_alpha; change one or the other")


def _check_discrete(where: str, value: float, n: int, default: float) -> None:
    high = math.log(n)
    if 0 < value < high:
        return
    hint = " (a negative target is the continuous heuristic -dim(A), DI-engine's discrete SAC default)" \
        if value < 0 else ""
    raise ConfigError(f"{where}={value}: a Discrete({n}) part's target entropy must be in (0, log {n}) = "
                      f"(0, {high:.4g}): its entropy lies between 0 (deterministic) and log {n} (uniform), so a "
                      f"target at or beyond either end moves alpha one way for ever{hint}; remove it for the default "
                      f"target_entropy_ratio * log {n} = {default:.4g}, or choose a value inside")


def _check_continuous(where: str, value: float, dim: int, log_std_min: float) -> None:
    high = dim * S.SQUASHED_GAUSSIAN_MAX_ENTROPY
    if value >= high:
        raise ConfigError(f"{where}={value}: a {dim}-dim continuous part's target entropy must be below {dim} * "
                          f"{S.SQUASHED_GAUSSIAN_MAX_ENTROPY} = {high:.4g}, the largest entropy of a tanh-squashed "
                          f"Gaussian on [-1, 1]^{dim}; above it alpha would grow without bound; remove it for the "
                          f"default -dim(A) = {-dim}, or choose a lower value")
    low = dim * (0.5 * math.log(2 * math.pi * math.e) + log_std_min)
    if value < low:
        warnings.warn(f"{where}={value}: below {low:.4g}, the entropy of the narrowest Gaussian the actor outputs "
                      f"(policy.model.log_std_min={log_std_min}) in {dim} dims; only a saturated tanh (actions "
                      f"pinned at the bounds) reaches it, and alpha will sink to its floor exp(min_log_alpha); "
                      f"-dim(A) = {-dim} is the usual target", UserWarning, stacklevel=2)


def target_entropies(learn: EasyDict, sizes: Mapping[str, int], log_std_min: float, path: str) -> List[float]:
    """One target entropy per temperature, in the order of ``sizes`` (``{'discrete': n}``, ``{'continuous': D}``
    or both, discrete first), from ``learn.target_entropy`` and the defaults (``target_entropy_ratio`` * log n,
    -D); refuses one the policy cannot reach (see the module docstring). ``path`` is the learn section's."""
    defaults = {head: S.discrete_target_entropy(size, learn.target_entropy_ratio) if head == "discrete"
                else S.continuous_target_entropy(size) for head, size in sizes.items()}
    given = _given(learn.target_entropy, defaults, f"{path}.target_entropy")
    targets = []
    for head, size in sizes.items():
        default = defaults[head]
        where, value = given.get(head, (None, None))
        if value is None:
            targets.append(default)
            continue
        if head == "discrete":
            _check_discrete(where, value, size, default)
        else:
            _check_continuous(where, value, size, log_std_min)
        targets.append(float(value))
    return targets


def masked_target_entropy(target: float, n_actions: int, mask: torch.Tensor) -> torch.Tensor:
    """A Discrete(``n_actions``) part's ``target`` entropy in each state of an action mask (B, A) bool, (B,):
    ``target`` * log n(s) / log ``n_actions``, n(s) the state's valid actions (module docstring)."""
    if n_actions < 2:
        return torch.zeros(mask.shape[:-1], device=mask.device)
    valid = mask.sum(-1).clamp(min=1).float()
    return valid.log() * (float(target) / math.log(n_actions))

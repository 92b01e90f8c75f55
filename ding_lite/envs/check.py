"""The env checker's findings: pure functions that look at one thing an env did and say what is wrong and the fix.

``ding_lite check-env ENV`` and ``env.check=True`` run them through ``check_env`` (``check_run.py``), which makes
the env as a run does and steps it. Each function returns a list of ``Finding``: an error (a run cannot work, or
would learn from wrong data), a warning (it works, but something looks unintended) or an info line (numbers). None of
them raises on a bad env. The action masks' checks are in ``check_mask.py``.
"""
import inspect
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np

from .action_adapter import BOUNDS_FIX, rescale_overflows
from .env_spec import EnvSpec
from .finite_check import all_finite
from .obs_space import UnsupportedObsSpace

LEVELS = ("error", "warning", "info")
RESET_FIX = ("write it as gymnasium 1.x does: def reset(self, *, seed=None, options=None), calling "
             "super().reset(seed=seed) and returning (obs, info)")
STEP_FIX = ("return (obs, reward, terminated, truncated, info) as gymnasium 1.x does: terminated when the episode "
            "really ends (no bootstrap), truncated when it is cut short (a time limit), instead of the old single "
            "'done'")


@dataclass(frozen=True)
class Finding:
    """One line of the checker's report: ``level`` (error, warning, info), the ``check`` it comes from, what it
    found and (errors and warnings) the fix."""

    level: str
    check: str
    message: str
    fix: str = ""
    subject: str = field(default="", compare=False)  # what it is about (an obs key path): the report's lines differ

    def line(self) -> str:
        """The report's line for it."""
        fix = f"; fix: {self.fix}" if self.fix else ""
        return f"{self.level:<7} [{self.check}] {self.message}{fix}"


def error(check: str, message: str, fix: str, subject: str = "") -> Finding:
    return Finding("error", check, message, fix, subject)


def warning(check: str, message: str, fix: str) -> Finding:
    return Finding("warning", check, message, fix)


def has_errors(findings: Sequence[Finding]) -> bool:
    """True when any finding is an error (``check-env`` exits 2, a run with ``env.check`` refuses to start)."""
    return any(f.level == "error" for f in findings)


def format_report(title: str, findings: Sequence[Finding]) -> str:
    """The short report: a title line, the findings (errors first), and a count line."""
    order = sorted(findings, key=lambda f: LEVELS.index(f.level))
    counts = {level: sum(f.level == level for f in findings) for level in ("error", "warning")}
    verdict = "ok" if not counts["error"] and not counts["warning"] else (
        f"{counts['error']} error(s), {counts['warning']} warning(s)")
    return "\n".join([title] + [f"  {f.line()}" for f in order] + [f"result: {verdict}"])


# ---- spaces -------------------------------------------------------------------------------------------------------
def space_findings(observation_space: gym.Space, action_space: gym.Space) -> List[Finding]:
    """Whether ding_lite takes the spaces: ``EnvSpec.from_spaces`` (``obs_space.py``'s message names the fix)."""
    try:
        EnvSpec.from_spaces(observation_space, action_space)
    except UnsupportedObsSpace as err:
        message, _, fix = str(err).partition("; ")
        return [error("spaces", message, fix)]
    except TypeError as err:
        message, _, fix = str(err).partition(": ")
        return [error("spaces", message, fix or "use Discrete, MultiDiscrete, Box or Tuple(Discrete, Box)")]
    return []


def action_bound_findings(action_space: gym.Space, bound: Optional[str] = None) -> List[Finding]:
    """A Box action space's bounds (also the Box of a mixed ``Tuple(Discrete, Box)``): NaN is an error; infinite is
    an error for a policy that maps [-1, 1] onto the bounds (``bound='rescale'``: SAC), a warning when the policy is
    not known (``bound=None``) and fine for one that clips (``'clip'``: IMPALA, ACER)."""
    box = action_space[1] if isinstance(action_space, gym.spaces.Tuple) and len(action_space) == 2 else action_space
    if not isinstance(box, gym.spaces.Box):
        return []
    low, high = np.asarray(box.low, np.float64), np.asarray(box.high, np.float64)
    where = f"the action space Box(low={low.tolist()}, high={high.tolist()})"
    if np.isnan(low).any() or np.isnan(high).any():
        return [error("action bounds", f"{where} has a NaN bound", BOUNDS_FIX)]
    finite = np.isfinite(low).all() and np.isfinite(high).all()
    if finite and bound != "clip" and rescale_overflows(np.asarray(box.low), np.asarray(box.high)):
        message = (f"{where} is too wide for {box.dtype}: (high - low) / 2 or (high + low) / 2 overflows, so a policy "
                   f"that maps [-1, 1] onto the bounds (SAC) would send infinite actions")
        return [error("action bounds", message, BOUNDS_FIX) if bound == "rescale" else
                warning("action bounds", message, BOUNDS_FIX)]
    if finite or bound == "clip":
        return []
    if bound == "rescale":
        return [error("action bounds", f"{where} is unbounded, and this config's policy maps its actions in "
                                       f"[-1, 1] onto the bounds", BOUNDS_FIX)]
    return [warning("action bounds", f"{where} is unbounded: SAC (which maps [-1, 1] onto the bounds) refuses it, "
                                     f"IMPALA and ACER clip to it", BOUNDS_FIX)]


# ---- observations and rewards -------------------------------------------------------------------------------------
def obs_findings(obs: Any, space: gym.Space, where: str, path: str = "obs") -> List[Finding]:
    """Whether ``obs`` (what reset or step returned, ``where``: 'after reset', 'at step 3') is in ``space``: Dict
    keys, Tuple length, each leaf's shape, dtype and bounds, and finite values."""
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(obs, dict):
            return [error("obs", f"{path} {where} is a {type(obs).__name__}, the space is a Dict",
                          "return a dict with the space's keys", path)]
        missing, extra = sorted(set(space.keys()) - set(obs)), sorted(set(obs) - set(space.keys()))
        if missing or extra:
            return [error("obs", f"{path} {where} has keys {sorted(obs)}, the Dict space {sorted(space.keys())}",
                          "return the space's keys, or declare the keys the env returns", path)]
        return [f for key, sub in space.items() for f in obs_findings(obs[key], sub, where, f"{path}[{key!r}]")]
    if isinstance(space, gym.spaces.Tuple):
        if not isinstance(obs, (tuple, list)) or len(obs) != len(space):
            return [error("obs", f"{path} {where} is a {type(obs).__name__} of {_len(obs)} items, the space a Tuple "
                                 f"of {len(space)}", "return a tuple with one item per space of the Tuple", path)]
        return [f for i, sub in enumerate(space) for f in obs_findings(obs[i], sub, where, f"{path}[{i}]")]
    if isinstance(space, (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        return _leaf_findings(obs, space, where, path)
    return [] if space.contains(obs) else [error("obs", f"{path} {where} is not in its space {space}",
                                                 "return observations of the declared space", path)]


def _len(x: Any) -> Any:
    try:
        return len(x)
    except TypeError:
        return "no"


def _leaf_findings(obs: Any, space: gym.Space, where: str, path: str) -> List[Finding]:
    arr = np.asarray(obs)
    shape = () if isinstance(space, gym.spaces.Discrete) else tuple(space.shape)
    if arr.shape != shape:
        fix = ("return one int" if isinstance(space, gym.spaces.Discrete)
               else f"return an array of shape {shape}, or declare the space with shape {arr.shape}")
        return [error("obs", f"{path} {where} has shape {arr.shape}, its space {space} has {shape}", fix, path)]
    if arr.dtype.kind not in "biuf":
        return [error("obs", f"{path} {where} has dtype {arr.dtype}, not a number", "return a numeric array", path)]
    if not all_finite(arr):
        bad = int(np.flatnonzero(~np.isfinite(arr.reshape(-1)))[0])
        return [error("finite", f"{path} {where} is not finite (element {bad} is {arr.reshape(-1)[bad]})",
                      "fix the env, or wrap it to clip/sanitise its observations (a NaN or inf reaches the losses)",
                      path)]
    out = []
    if isinstance(space, gym.spaces.Discrete):
        if arr.dtype.kind not in "iu":
            out.append(error("obs", f"{path} {where} is {obs!r} ({arr.dtype}), its space {space} takes integers",
                             "return an int (np.int64)", path))
        low, high = np.asarray(space.start), np.asarray(space.start + space.n - 1)
    elif isinstance(space, gym.spaces.MultiBinary):
        low, high = np.zeros(shape), np.ones(shape)
    elif isinstance(space, gym.spaces.MultiDiscrete):
        low, high = np.asarray(space.start), np.asarray(space.start) + np.asarray(space.nvec) - 1
    else:
        low, high = space.low, space.high
    if not isinstance(space, gym.spaces.Discrete) and not np.can_cast(arr.dtype, space.dtype):
        out.append(error("obs", f"{path} {where} has dtype {arr.dtype}, which its space {space} cannot take "
                                f"without a loss (gymnasium's contains() refuses it)",
                         f"return obs.astype(np.{np.dtype(space.dtype).name}), or declare the space with "
                         f"dtype=np.{arr.dtype.name}", path))
    outside = (arr < low) | (arr > high)
    if outside.any():
        i = int(np.flatnonzero(outside.reshape(-1))[0])
        flat_low, flat_high = np.broadcast_to(low, shape).reshape(-1), np.broadcast_to(high, shape).reshape(-1)
        out.append(error("obs", f"{path} {where}: element {i} is {arr.reshape(-1)[i]}, outside its space's "
                                f"[{flat_low[i]}, {flat_high[i]}] ({int(outside.sum())} element(s) outside)",
                         "clip the observation, or declare bounds that hold it", path))
    return out


def reward_findings(reward: Any, where: str) -> List[Finding]:
    """A reward is one finite real number."""
    arr = np.asarray(reward)
    if arr.shape != () or arr.dtype.kind not in "biuf":
        return [error("reward", f"the reward {where} is {reward!r} (shape {arr.shape}, {arr.dtype}), not one number",
                      "return a float")]
    if not all_finite(arr):
        return [error("finite", f"the reward {where} is {reward}", "fix the env, or wrap it to clip/sanitise its "
                                                                    "rewards (a NaN or inf reaches the losses)")]
    return []


# ---- the API: reset and step --------------------------------------------------------------------------------------
def reset_signature_findings(env: gym.Env) -> List[Finding]:
    """``reset`` of the env (the innermost one: wrappers pass ``seed`` on) takes ``seed`` and ``options``."""
    try:
        params = inspect.signature(env.unwrapped.reset).parameters
    except (TypeError, ValueError):
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return []
    missing = [name for name in ("seed", "options") if name not in params]
    if not missing:
        return []
    return [error("signature", f"{type(env.unwrapped).__name__}.reset takes no {' or '.join(missing)} argument "
                               f"(ding_lite seeds every env with reset(seed=...))", RESET_FIX)]


def reset_result_findings(result: Any) -> List[Finding]:
    """``reset`` returned ``(obs, info)`` with a dict ``info``."""
    if not isinstance(result, tuple) or len(result) != 2:
        what = f"a tuple of {len(result)}" if isinstance(result, tuple) else f"a {type(result).__name__}"
        return [error("signature", f"reset returned {what}, not (obs, info)", RESET_FIX)]
    if not isinstance(result[1], dict):
        return [error("signature", f"reset's info is a {type(result[1]).__name__}, not a dict",
                      "return (obs, {}) when there is nothing to say")]
    return []


def step_result_findings(result: Any) -> List[Finding]:
    """``step`` returned gymnasium 1.x's 5-tuple with a dict ``info``; flags that are not bools are a warning."""
    if isinstance(result, tuple) and len(result) == 4:
        return [error("signature", "step returned 4 values (obs, reward, done, info): the old gym API",
                      STEP_FIX)]
    if not isinstance(result, tuple) or len(result) != 5:
        what = f"a tuple of {len(result)}" if isinstance(result, tuple) else f"a {type(result).__name__}"
        return [error("signature", f"step returned {what}, not (obs, reward, terminated, truncated, info)",
                      STEP_FIX)]
    out = []
    if not isinstance(result[4], dict):
        out.append(error("signature", f"step's info is a {type(result[4]).__name__}, not a dict",
                         "return {} when there is nothing to say"))
    for name, flag in (("terminated", result[2]), ("truncated", result[3])):
        if not isinstance(flag, (bool, np.bool_)):
            out.append(warning("signature", f"step's {name} is {flag!r} ({type(flag).__name__}), not a bool",
                               f"return bool({name})"))
    return out


def step_exception_findings(err: Exception, where: str) -> List[Finding]:
    """What a ``reset`` or ``step`` that raised means: a wrapper unpacking an old-API 4-tuple, or the env's own
    error."""
    text = f"{type(err).__name__}: {err}"
    if isinstance(err, ValueError) and "expected 5, got 4" in str(err):
        return [error("signature", f"{where} failed ({text}): the env's step returns the old gym API's 4 values",
                      STEP_FIX)]
    return [error("crash", f"{where} raised {text}", "fix the env (run it alone to see the traceback)")]


# ---- episodes, seeding, time --------------------------------------------------------------------------------------
def time_limit_of(env: gym.Env) -> Optional[int]:
    """The episode step limit of a ``TimeLimit`` around the env (gymnasium.make's, or ``env.max_episode_steps``'s),
    or None."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.TimeLimit):
            return int(env._max_episode_steps)
        env = env.env
    return None


def episode_end_findings(episodes: Sequence[Tuple[int, bool, bool]], steps: int, unfinished: int,
                         time_limit: Optional[int]) -> List[Finding]:
    """How episodes ended: ``episodes`` are (length, terminated, truncated) of the finished ones, ``unfinished`` the
    length of the last, unfinished one. No end in ``steps`` steps without a time limit, and episodes that all end
    with terminated=True after the same number of steps (a time limit written as termination), are warnings."""
    if not episodes and time_limit is None:
        return [warning("episode end", f"no episode ended in {steps} steps and the env has no time limit: "
                                       f"returns are never reported and an episode may never end",
                        "set env.max_episode_steps (a TimeLimit: episodes end with truncated=True), or end them "
                        "in the env")]
    lengths = {length for length, terminated, _ in episodes if terminated}
    if len(episodes) >= 3 and all(t and not tr for _, t, tr in episodes) and len(lengths) == 1:
        length = lengths.pop()
        return [warning("episode end", f"all {len(episodes)} episodes ended with terminated=True after exactly "
                                       f"{length} steps: a time limit reported as termination stops the value "
                                       f"bootstrap there",
                        f"if it is a time limit, return truncated=True instead (or drop it and set "
                        f"env.max_episode_steps={length})")]
    ends = {"terminated": sum(t for _, t, _ in episodes), "truncated": sum(tr and not t for _, t, tr in episodes)}
    limit = f"time limit {time_limit}" if time_limit is not None else "no TimeLimit wrapper"
    lengths = [length for length, _, _ in episodes] or [unfinished]
    return [Finding("info", "episode end", f"{len(episodes)} episode(s) in {steps} steps ({ends['terminated']} "
                                           f"terminated, {ends['truncated']} truncated; {limit}); length "
                                           f"{min(lengths)}-{max(lengths)}")]


def same_obs(a: Any, b: Any) -> bool:
    """Whether two observations (arrays, or dict/tuple nestings) are equal, NaN equal to NaN."""
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(
            same_obs(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return (isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b)
                and all(same_obs(x, y) for x, y in zip(a, b)))
    x, y = np.asarray(a), np.asarray(b)
    try:
        return x.shape == y.shape and bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))
    except TypeError:
        return bool(np.array_equal(x, y))


def seeding_findings(first: Sequence[Any], second: Sequence[Any], seed: int) -> List[Finding]:
    """Two fresh envs reset with ``seed`` and stepped with the same seeded actions: ``first`` and ``second`` are their
    observations (reset's first). They must be equal, as far as both go."""
    for i, (a, b) in enumerate(zip(first, second)):
        if not same_obs(a, b):
            when = "the first observation after reset" if i == 0 else f"the observation after step {i}"
            return [warning("seeding", f"two envs reset with seed={seed} and given the same actions differ in "
                                       f"{when}: a run's seed does not reproduce its envs",
                            "in reset, call super().reset(seed=seed) and draw every random number from "
                            "self.np_random")]
    return []


def step_time_findings(times: Sequence[float], step_timeout_s: Optional[float]) -> List[Finding]:
    """The median and the max of the step times (seconds); a step longer than ``env.step_timeout_s`` is an error:
    a run would stop there as a hung env."""
    if not len(times):
        return []
    median, longest = float(np.median(times)), float(np.max(times))
    out = [Finding("info", "step time", f"median {median * 1e3:.3g} ms, max {longest * 1e3:.3g} ms over "
                                        f"{len(times)} steps")]
    if step_timeout_s is not None and longest > step_timeout_s:
        out.append(error("step time", f"a step took {longest:.1f} s, more than env.step_timeout_s="
                                      f"{step_timeout_s} (a run stops there as a hung env)",
                         "make the step faster, or raise env.step_timeout_s (None: no limit)"))
    return out


"""``check_env``: make an env, reset and step it with random (seeded, mask-respecting) actions, and collect what the
checks of ``check.py`` and ``check_mask.py`` find. ``ding_lite check-env`` and ``env.check=True`` call it with the
run's own env maker (``env_factory``: the wrappers included)."""
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import gymnasium as gym

from .check import (Finding, action_bound_findings, episode_end_findings, error, obs_findings, reset_result_findings,
                    reset_signature_findings, reward_findings, seeding_findings, space_findings,
                    step_exception_findings, step_result_findings, step_time_findings, time_limit_of)
from .check_mask import find_mask, mask_findings, masked_sample
from .obs_space import copy_obs

DEFAULT_STEPS = 1000
SEED_STEPS = 5  # steps of the seeding check after its reset


class FindingLog:
    """Findings in order of first appearance, one per (level, check, subject, fix): a broken observation repeated at
    every step is one line that says how often it came up."""

    def __init__(self) -> None:
        self.first: Dict[Tuple[str, str, str, str], Finding] = {}
        self.count: Dict[Tuple[str, str, str, str], int] = {}

    def add(self, findings: Sequence[Finding]) -> bool:
        """Record ``findings``; True when any is an error."""
        for f in findings:
            key = (f.level, f.check, f.subject, f.fix or f.message)
            self.first.setdefault(key, f)
            self.count[key] = self.count.get(key, 0) + 1
        return any(f.level == "error" for f in findings)

    def has_error(self, check: str) -> bool:
        """Whether an error of ``check`` was found."""
        return any(level == "error" and name == check for level, name, _, _ in self.first)

    def findings(self) -> List[Finding]:
        out = []
        for key, f in self.first.items():
            n = self.count[key]
            out.append(f if n == 1 else Finding(f.level, f.check, f"{f.message} ({n} times)", f.fix, f.subject))
        return out


def check_env(make_env: Callable[[], gym.Env], steps: int = DEFAULT_STEPS, seed: int = 0,
              bound: Optional[str] = None, step_timeout_s: Optional[float] = None,
              mask_key: Optional[str] = None) -> List[Finding]:
    """Every check on the envs ``make_env`` makes: one env stepped ``steps`` times, a second one for the seeding
    check. ``bound`` is the policy's action bound mode ('clip', 'rescale'; None: not known), ``step_timeout_s`` the
    run's ``env.step_timeout_s``, ``mask_key`` its ``env.action_mask_key`` (None or '': the env's
    ``action_mask_key`` attribute, else 'action_mask'). gymnasium's own warnings are silenced: each problem is one finding."""
    log = FindingLog()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = _make(make_env, log)
        if env is None:
            return log.findings()
        log.add(action_bound_findings(env.action_space, bound))
        try:
            trajectory = _run(env, log, steps, seed, step_timeout_s, mask_key or None)
        finally:
            env.close()
        if trajectory and not log.has_error("signature"):  # the seeding check calls reset and step as gymnasium does
            second = _make(make_env, log)
            if second is not None:
                try:
                    log.add(seeding_findings(trajectory, _replay(second, seed, len(trajectory) - 1, mask_key or None), seed))
                except Exception as err:  # noqa: BLE001  (the first env got through the same calls)
                    log.add(step_exception_findings(err, "the seeding check's second env"))
                finally:
                    second.close()
    return log.findings()


def _make(make_env: Callable[[], gym.Env], log: FindingLog) -> Optional[gym.Env]:
    try:
        return make_env()
    except Exception as err:  # noqa: BLE001  (any failure of a user's env is a finding)
        log.add([error("crash", f"making the env raised {type(err).__name__}: {err}",
                       "fix the env or its config (env.kwargs, env.wrappers)")])
        return None


def _reset(env: gym.Env, log: FindingLog, where: str, **kwargs: Any) -> Optional[Tuple[Any, Any]]:
    """``env.reset(**kwargs)`` checked: its result, and the observation in its space; None when it cannot go on."""
    try:
        result = env.reset(**kwargs)
    except Exception as err:  # noqa: BLE001
        log.add(step_exception_findings(err, f"reset ({where})"))
        return None
    if log.add(reset_result_findings(result)):
        if isinstance(result, tuple):
            return None
        result = (result, {})  # reset returned the observation alone: check it anyway
    log.add(obs_findings(result[0], env.observation_space, where))
    return result


def _run(env: gym.Env, log: FindingLog, steps: int, seed: int, step_timeout_s: Optional[float],
         mask_key: Optional[str] = None) -> Optional[List[Any]]:
    """Reset with ``seed`` and take ``steps`` random steps (resetting after each episode). Returns the observations
    of the first ``SEED_STEPS`` steps for the seeding check (None when seeding cannot be checked)."""
    log.add(space_findings(env.observation_space, env.action_space))
    seedable = not log.add(reset_signature_findings(env))
    env.action_space.seed(seed)
    reset = _reset(env, log, "after reset", **({"seed": seed} if seedable else {}))
    if reset is None:
        return None
    obs, info = reset
    mask_source, mask = _mask(env, obs, info, log, None, "after reset", mask_key)
    trajectory: Optional[List[Any]] = [copy_obs(obs)] if seedable else None
    times, episodes, length = [], [], 0
    for t in range(1, steps + 1):
        action = masked_sample(env.action_space, mask)
        start = time.perf_counter()
        try:
            result = env.step(action)
        except Exception as err:  # noqa: BLE001
            log.add(step_exception_findings(err, f"step {t}"))
            return None
        times.append(time.perf_counter() - start)
        if log.add(step_result_findings(result)):
            return None
        obs, reward, terminated, truncated, info = result
        where = f"at step {t}"
        log.add(obs_findings(obs, env.observation_space, where))
        log.add(reward_findings(reward, where))
        length += 1
        if trajectory is not None and not episodes and len(trajectory) <= SEED_STEPS and not (terminated or truncated):
            trajectory.append(copy_obs(obs))
        if terminated or truncated:
            episodes.append((length, bool(terminated), bool(truncated)))
            length = 0
            reset = _reset(env, log, f"after the reset at step {t}")
            if reset is None:
                return None
            obs, info = reset
            where = f"after the reset at step {t}"
        mask_source, mask = _mask(env, obs, info, log, mask_source, where, mask_key)
    log.add(episode_end_findings(episodes, steps, length, time_limit_of(env)))
    log.add(step_time_findings(times, step_timeout_s))
    return trajectory


def _mask(env: gym.Env, obs: Any, info: Any, log: FindingLog, expected: Optional[str],
          where: str, key: Optional[str] = None) -> Tuple[Optional[str], Any]:
    """The env's mask now, checked against the action space and against where the first one came from."""
    try:
        found = find_mask(env, obs, info, key)
    except Exception as err:  # noqa: BLE001  (env.action_masks() raised)
        log.add([error("mask", f"env.action_masks() {where} raised {type(err).__name__}: {err}",
                       "fix action_masks()")])
        return expected, None
    source, mask = found if found is not None else (None, None)
    if expected is not None and source != expected:
        log.add([error("mask", f"the action mask came from {expected} after reset, but from "
                               f"{source or 'nowhere'} {where}", "give the mask the same way after every reset "
                                                                 "and step")])
    if source is not None:
        log.add(mask_findings(mask, env.action_space, source, where))
    return source or expected, mask


def _replay(env: gym.Env, seed: int, steps: int, key: Optional[str] = None) -> List[Any]:
    """The observations of a second env reset with ``seed`` and stepped with the same seeded actions."""
    env.action_space.seed(seed)
    obs, info = env.reset(seed=seed)
    out = [copy_obs(obs)]
    for _ in range(steps):
        found = find_mask(env, obs, info, key)
        obs, _, terminated, truncated, info = env.step(masked_sample(env.action_space, found and found[1]))
        out.append(copy_obs(obs))
        if terminated or truncated:
            break
    return out

"""Validation of a user's config layer against the defaults tree: unknown keys, wrong types, NaN and infinity.

Every message starts with the full dotted key path, so the user can find the line to fix. Impossible values
(negative sizes, unknown choices) are left to the components' own ``check_config``.
"""
import math
import numbers
import re
import warnings
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ding_lite.utils.errors import ConfigError
from ding_lite.utils.suggest import closest

from .compat import IGNORED_KEYS, main_key_reason, value_reason

# Names too generic to send the user to "where this key lives" elsewhere in the tree.
_NOT_RELOCATED = ("type", "import_names")


# Leaf keys whose None turns a feature off whatever their default (a str option): None is their documented value.
NONE_MEANS_OFF = frozenset({"grad_clip_type"})


def dotted(path: Sequence[Any]) -> str:
    return ".".join(str(k) for k in path)


def _short_repr(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def expected_type(value: Any, default: Any) -> Optional[str]:
    """The type name ``value`` should have to replace ``default``, or None when it fits.

    bool is strict; int takes integers only; float takes int or float (so does an ``inf`` default); list and tuple are
    interchangeable; a None default takes anything; anything else must be an instance of the default's type.
    """
    if default is None:
        return None
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "bool"
    if isinstance(default, numbers.Integral):
        return None if isinstance(value, numbers.Integral) and not isinstance(value, bool) else "int"
    if isinstance(default, numbers.Real):
        return None if isinstance(value, numbers.Real) and not isinstance(value, bool) else "float"
    if isinstance(default, str):
        return None if isinstance(value, str) else "str"
    if isinstance(default, (list, tuple)):
        return None if isinstance(value, (list, tuple)) else "list"
    if isinstance(default, Mapping):
        return None if isinstance(value, Mapping) else "dict"
    return None if isinstance(value, type(default)) else type(default).__name__


def _type_message(path: str, value: Any, expected: str) -> str:
    message = f"{path}={_short_repr(value)}: expected {expected}, got {type(value).__name__}"
    if expected == "int" and isinstance(value, float) and math.isfinite(value) and value.is_integer():
        message += f" (write {int(value)})"
    return message


def _is_float_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral))


def first_non_finite(value: Any, path: str) -> Optional[Tuple[str, float]]:
    """``(path of the element, element)`` of the first NaN or +-inf in ``value`` (searched through lists, tuples
    and dicts: ``path[1]``, ``path.key``), or None when every number in it is finite."""
    if _is_float_number(value):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, Mapping):
        items: Iterable = ((f"{path}.{k}", v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for sub_path, sub_value in items:
        found = first_non_finite(sub_value, sub_path)
        if found is not None:
            return found
    return None


def _takes_inf(default: Any, shadowed: Sequence[Any]) -> bool:
    """Whether a key whose default (or a lower layer's replaced default) is infinite, such as a buffer's
    ``max_use``, means 'no limit'; only those keys accept +-inf."""
    return any(_is_float_number(d) and math.isinf(d) for d in (default, *shadowed))


def check_finite(path: str, value: Any, default: Any, shadowed: Sequence[Any]) -> Optional[str]:
    """The error message for a NaN or +-inf in ``value`` (at dotted ``path``), or None when it is allowed.

    NaN is never a setting. Infinity is only where the default is infinite (the key itself, not inside a list or
    dict). A None default means 'unset': the message says to write None rather than inf or nan.
    """
    found = first_non_finite(value, path)
    if found is None:
        return None
    where, bad = found
    takes_inf = where == path and _takes_inf(default, shadowed)
    if takes_inf and math.isinf(bad):
        return None
    if takes_inf:
        return f"{where}=nan: must be a number, or inf for no limit"
    fix = "must be a finite number" + (", or None to leave it unset" if default is None and where == path else "")
    return f"{where}={bad!r}: {fix}"


def find_key(tree: Mapping, key: Any, prefix: tuple = ()) -> List[str]:
    """Dotted paths of every ``key`` in the nested ``tree`` (to tell the user where a misplaced key lives)."""
    found = []
    for k, v in tree.items():
        if k == key:
            found.append(dotted(prefix + (k,)))
        if isinstance(v, Mapping):
            found.extend(find_key(v, key, prefix + (k,)))
    return found


def unknown_key_message(path: Sequence[Any], level: Mapping, root: Mapping, policy_type: Optional[str],
                        value: Any = None) -> str:
    """Why ``path`` (absent from ``level``, the defaults at its parent) is refused, and what to write instead.

    In order: a DI-engine key with a known reason; the same key living elsewhere; the closest valid key at that level
    whose type can take ``value`` (a string is no misspelt number); a section-wide DI-engine reason; the list of valid
    keys at that level.
    """
    name, key, parent = dotted(path), path[-1], dotted(path[:-1])
    reason = main_key_reason(path, policy_type, wildcard=False)
    if reason:
        return f"{name}: {reason}"
    if key not in _NOT_RELOCATED:
        elsewhere = find_key(root, key)
        if elsewhere:
            return f"{name}: unknown key; it lives at {' or '.join(elsewhere)} in ding_lite; move it there"
    near = closest(str(key), [str(k) for k in level if expected_type(value, level[k]) is None])
    if near is not None:
        return f"{name}: unknown key; did you mean {dotted(tuple(path[:-1]) + (near,))}?"
    reason = main_key_reason(path, policy_type, wildcard=True)
    if reason:
        return f"{name}: {reason}"
    valid = ", ".join(sorted(str(k) for k in level)) or "(none)"
    return f"{name}: unknown key; valid keys at {parent or 'the top level'}: {valid}"


def validate_layer(layer: dict, defaults: Mapping, free_form: Set[str], policy_type: Optional[str],
                   source: str = "", shadowed: Optional[Mapping[str, list]] = None) -> List[str]:
    """Check every key of ``layer`` (a plain nested dict) against ``defaults``; return one message per unknown key,
    wrong type, or NaN / infinity (see ``check_finite``), and remove those keys from ``layer`` (so the rest can be
    compiled and checked in the same pass). Keys in ``IGNORED_KEYS`` are removed from ``layer`` in place too. Sections listed in ``free_form`` (absolute dotted paths) are type-checked as a whole but not
    key by key; NaN and infinity are refused inside them too.

    ``shadowed`` maps a dotted path to defaults of lower layers that the one in ``defaults`` replaced; a value that
    fits one of them has the right type too. ``source`` (e.g. '--set') is appended to messages, so the user knows which
    input to edit.
    """
    suffix = f" (from {source})" if source else ""
    problems: List[str] = []
    _walk(layer, defaults, (), defaults, free_form, policy_type, suffix, shadowed or {}, problems)
    return problems


def _walk(layer: dict, level: Mapping, prefix: tuple, root: Mapping, free_form: Set[str],
          policy_type: Optional[str], suffix: str, shadowed: Mapping[str, list], problems: List[str]) -> None:
    for key in list(layer):
        path = prefix + (key,)
        value = layer[key]
        if key not in level:
            if key not in IGNORED_KEYS:
                problems.append(unknown_key_message(path, level, root, policy_type, value) + suffix)
            del layer[key]
            continue
        default = level[key]
        expected = None if value is None and key in NONE_MEANS_OFF else expected_type(value, default)
        if expected is not None and any(expected_type(value, d) is None for d in shadowed.get(dotted(path), ())):
            expected = None
        if expected is not None:
            problems.append(_type_message(dotted(path), value, expected) + suffix)
            del layer[key]
            continue
        reason = value_reason(path, value)  # a DI-engine value ding_lite does not take (the key stays)
        if reason is not None:
            problems.append(f"{dotted(path)}={_short_repr(value)}: {reason}" + suffix)
            continue
        if isinstance(default, Mapping) and isinstance(value, dict) and dotted(path) not in free_form:
            _walk(value, default, path, root, free_form, policy_type, suffix, shadowed, problems)
            continue
        message = check_finite(dotted(path), value, default, shadowed.get(dotted(path), ()))
        if message is not None:
            problems.append(message + suffix)
            del layer[key]


def problem_key(problem: str) -> str:
    """The key path a problem message starts with ('env.env_id' of "env.env_id='X': ...")."""
    return re.split(r"[=: ]", problem, maxsplit=1)[0]


# gymnasium ids whose 'solved' return is known: (default episode limit, solved return, the id's older twin).
SOLVED_RETURNS = {"CartPole-v1": (500, 475, "CartPole-v0's (200-step episodes)")}
# The v0 task: a time limit of at most this many steps makes CartPole-v1 CartPole-v0 (solved at 195).
V0_STEPS = 200


def misleading_settings(cfg: Mapping) -> List[str]:
    """Settings that compile and run but do not do what they seem to: a CartPole-v1 stop value below its solved return
    (475 of 500), e.g. DI-engine's 195, which is CartPole-v0's (200-step episodes): on v1 an evaluation mean of 195 is
    reached long before the policy balances for 500 steps, so the run stops unsolved and reports success."""
    env = cfg.get("env") if isinstance(cfg, Mapping) else None
    if not isinstance(env, Mapping) or env.get("env_id") not in SOLVED_RETURNS:
        return []
    limit, solved, twin = SOLVED_RETURNS[env["env_id"]]
    stop, steps = env.get("stop_value"), env.get("max_episode_steps")
    if not isinstance(stop, numbers.Real) or isinstance(stop, bool) or stop >= solved:
        return []
    if isinstance(steps, numbers.Integral) and steps <= V0_STEPS:
        return []  # the v0 task, by its time limit
    return [f"env.stop_value={stop:g} on {env['env_id']}: below its solved return {solved} (episodes run to {limit} "
            f"steps), so the run stops before the task is solved; {stop:g} looks like {twin} threshold: set "
            f"env.stop_value={solved}, or env.max_episode_steps={V0_STEPS} to train the v0 task"]


def check_values(cfg: Mapping, checkers: Iterable) -> List[str]:
    """Run each component's ``check_config(section, path)`` on its section of the compiled ``cfg``; return the
    message of each one that refuses its section (a component reports its first problem). Settings that run but
    mislead are warned about (``misleading_settings``)."""
    for message in misleading_settings(cfg):
        warnings.warn(message, UserWarning, stacklevel=3)
    problems = []
    for cls, path in checkers:
        check = getattr(cls, "check_config", None)
        if check is None:
            continue
        section = cfg
        for key in path.split("."):
            section = section[key]
        try:
            check(section, path)
        except ConfigError as err:
            problems.append(str(err))
    return problems


def config_error(problems: Sequence[str]) -> ConfigError:
    """All the problems of a config as one error, sorted by key path: one line for one problem, else a count and a
    line for each, so a config (a ported DI-engine one, say) is fixed in one pass."""
    problems = sorted(set(problems))
    if len(problems) == 1:
        return ConfigError(problems[0])
    return ConfigError(f"{len(problems)} problems in the config; fix them all, then run again:\n  "
                       + "\n  ".join(problems))

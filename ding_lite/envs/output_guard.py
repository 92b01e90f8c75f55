"""One line instead of numpy's traceback when an env's ``step`` or ``reset`` returns what its spaces do not allow.

gymnasium's vector envs write each env's observation and reward into preallocated arrays; an observation of another
shape than ``observation_space`` fails there with "Output array is the wrong shape" (or "could not broadcast"), and a
reward that is not a scalar (``np.array([1.0, 1.0])``; a one-element array too from numpy 2.4, earlier numpy takes
it as its element with a DeprecationWarning) with "setting an array element with a sequence", neither naming the
env. ``guard_outputs`` translates exactly those errors into ``EnvOutputError`` naming the env, the call and the
fix (``ding_lite check-env`` finds which output it is); any other error passes through unchanged. Nothing runs per
step when the env is well-behaved: the check is in the error path only.
"""
from typing import Optional

import gymnasium as gym

from ding_lite.utils import UserError

# (fragment of numpy's / gymnasium's message, what it means)
KNOWN = (
    ("Output array is the wrong shape", "an observation whose shape differs from its observation_space"),
    ("could not broadcast", "an observation whose shape differs from its observation_space"),
    ("setting an array element with a sequence", "a reward, terminated or truncated that is not a scalar (e.g. "
                                                 "np.array([1.0]) instead of 1.0), or an observation of another "
                                                 "shape than its observation_space"),
)


class EnvOutputError(UserError):
    """An env returned an output its spaces do not allow."""


def explain(err: BaseException, env_name: str, role: str, call: str,
            space: Optional[gym.Space]) -> Optional[EnvOutputError]:
    text = str(err)
    for fragment, meaning in KNOWN:
        if fragment in text:
            return EnvOutputError(
                f"{role} env '{env_name}' returned {meaning} from {call}() (observation_space {space}; numpy: "
                f"{text.strip().rstrip('.')}); make its {call} return outputs that fit its spaces, and find which with "
                f"`ding_lite check-env -c CONFIG`")
    return None


def guard_outputs(venv: gym.vector.VectorEnv, env_name: str, role: str) -> gym.vector.VectorEnv:
    """Wrap ``venv``'s ``step`` and ``reset`` so that the known shape errors become ``EnvOutputError`` (see the module
    docstring); returns the same object."""
    space = getattr(venv, "single_observation_space", None)

    def guarded(name: str, call):
        def run(*args, **kwargs):
            try:
                return call(*args, **kwargs)
            except (ValueError, TypeError) as err:
                explained = explain(err, env_name, role, name, space)
                if explained is None:
                    raise
                raise explained from None
        return run

    venv.step, venv.reset = guarded("step", venv.step), guarded("reset", venv.reset)
    return venv

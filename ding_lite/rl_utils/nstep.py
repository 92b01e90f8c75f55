"""n-step returns for one-step off-policy targets (SAC's ``policy.nstep``, DI-engine's key).

For a transition at step t of an env and a horizon n, the n-step target replaces the one-step target
y = r_t + gamma (1 - terminated_t) V(s'_t) by

    m_t = min(n, 1 + (steps from t to the first episode end at or after t), steps left in the segment)
    G_t = sum_{k=0}^{m_t - 1} gamma^k r_{t+k}
    y_t = G_t + gamma^{m_t} (1 - terminated_{t+m_t-1}) V(s'_{t+m_t-1})

where V is the soft value of the algorithm and s'_j is step j's ``next_obs``: the true final observation of an
episode that ended at step j (the collector puts it there, not the reset observation). So:

* an episode end inside the window cuts it: rewards of the next episode never enter G_t;
* a termination stops the bootstrap (its value is 0);
* a truncation (time limit) bootstraps from the true final observation, with gamma^{m_t}, like any other step;
* with n = 1, m_t = 1 and y_t is the one-step target.

Segments: :func:`nstep_return` and :func:`nstep_transitions` see one time-major segment (T, B) and cut a window
that would run past its end there, bootstrapping from the last step's ``next_obs`` with gamma^{m_t}. That is still a
correct (shorter) m-step return; DI-engine's ``get_nstep_return_data`` also bootstraps at a trajectory's cut. SAC
and DQN avoid even that (``ding_lite/policy/transitions.py``): they keep the last n steps of every env and
emit the transition of n - 1 steps ago (:func:`nstep_first_transition`), whose window is then complete, so only
episode ends shorten a window.

Shapes are time-major: T steps, B envs (or any batch), then the leaf's own dims.
"""
from typing import Any, Dict, NamedTuple, Optional, Sequence, Union

import torch

from ding_lite.torch_utils.tree import tree_map, tree_stack

__all__ = ['NStepReturn', 'nstep_return', 'at_steps', 'nstep_transitions', 'nstep_first_transition', 'LAST_STEP_KEYS']

# The keys of a transition that an n-step sample takes from the window's last step (the bootstrap); every other key
# (obs, action, ...) is the first step's. ``next_action_mask`` (an action mask's, SAC's) where there is one.
LAST_STEP_KEYS = ("next_obs", "terminated", "truncated", "next_action_mask")


class NStepReturn(NamedTuple):
    """The pieces of the n-step target of every start step t of a segment, each (T, B)."""

    reward: torch.Tensor  # G_t = sum_{k<m_t} gamma^k r_{t+k}, in the reward's dtype
    length: torch.Tensor  # m_t in [1, n] (int64)
    last: torch.Tensor  # t + m_t - 1: the step whose next_obs and terminated flag the target bootstraps from (int64)
    discount: torch.Tensor  # gamma^{m_t}, in the reward's dtype


def nstep_return(reward: torch.Tensor, done: torch.Tensor, gamma: float, n: int) -> NStepReturn:
    """The n-step discounted reward sums of a time-major segment, windows cut at episode ends and the segment's end.

    Arguments:
        - reward: (T, B) r_t.
        - done: (T, B) bool, terminated or truncated: step t ended an episode (the window stops after it).
        - gamma: discount in [0, 1].
        - n: horizon, an int >= 1.
    Returns:
        :class:`NStepReturn` of (T, B) tensors; G_t accumulated in float64, then cast to ``reward``'s dtype.
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n}")
    T = reward.shape[0]
    r = reward.double()
    ret = r.clone()  # k = 0: every window holds its own step
    length = torch.ones(reward.shape, dtype=torch.long, device=reward.device)
    is_open = ~done.bool()  # window of t still open after its step t+k-1 (it has not met an episode end)
    for k in range(1, min(n, T)):
        # Step t+k joins t's window if it exists (t < T-k) and no episode ended in t .. t+k-1.
        joins = is_open[:T - k]
        ret[:T - k] += torch.where(joins, gamma ** k * r[k:], torch.zeros_like(r[k:]))
        length[:T - k] += joins.long()
        is_open = torch.cat([joins & ~done[k:].bool(), torch.zeros_like(is_open[T - k:])])
    steps = torch.arange(T, device=reward.device).view(T, *([1] * (reward.dim() - 1)))
    discount = torch.pow(torch.tensor(float(gamma), dtype=torch.float64, device=reward.device), length.double())
    return NStepReturn(ret.to(reward.dtype), length, steps + length - 1, discount.to(reward.dtype))


def at_steps(x: Any, steps: torch.Tensor) -> Any:
    """Each env's leaf at its own step: x (T, B, ...) (a tensor or a nested dict of them) and ``steps`` (S, B)
    integer indices into T -> (S, B, ...) with out[s, b] = x[steps[s, b], b]."""
    env = torch.arange(steps.shape[1], device=steps.device).unsqueeze(0).expand_as(steps)
    return tree_map(lambda leaf: leaf[steps.to(leaf.device), env.to(leaf.device)], x)


def nstep_transitions(segment: Dict[str, Any], gamma: float, n: int,
                      starts: Optional[Union[Sequence[int], torch.Tensor]] = None) -> Dict[str, Any]:
    """n-step train samples from a time-major segment of transitions (T, B, ...).

    ``segment`` holds ``reward``, ``terminated``, ``truncated``, ``next_obs`` (the true final observation where an
    episode ended) and whatever else a step stores (``obs``, ``action``, ...). The sample of start step t keeps
    step t's own leaves, with ``reward`` = G_t, ``next_obs``, ``terminated`` and ``truncated`` of its window's last
    step (``LAST_STEP_KEYS``), and a new leaf ``discount`` = gamma^{m_t} (the reward's dtype) to bootstrap with.

    Arguments:
        - segment: dict of (T, B, ...) leaves (``next_obs`` and others may be nested).
        - gamma, n: as in :func:`nstep_return`.
        - starts: the start steps to return (default all T): a sequence or 1-D tensor of indices into T.
    Returns:
        dict of (S, B, ...) leaves, S = len(starts) (T by default).
    """
    done = segment["terminated"].bool() | segment["truncated"].bool()
    nret = nstep_return(segment["reward"], done, gamma, n)
    index = torch.arange(nret.reward.shape[0]) if starts is None else torch.as_tensor(starts, dtype=torch.long)
    last = nret.last[index]
    sample = {key: at_steps(value, last) if key in LAST_STEP_KEYS else tree_map(lambda x: x[index.to(x.device)], value)
              for key, value in segment.items() if key != "reward"}
    sample["reward"] = nret.reward[index]
    sample["discount"] = nret.discount[index]
    return sample


def nstep_first_transition(steps: Sequence[Dict[str, Any]], gamma: float) -> Dict[str, Any]:
    """The n-step sample of the first of n = len(steps) consecutive steps of every env, what
    ``nstep_transitions(stacked steps, gamma, n, starts=[0])`` returns without its leading dim, in fewer operations
    (SAC's collect mode calls it once per vector step):

        alive_k = prod_{j<k} (1 - done_j)      (the window reaches step k: no episode ended before it)
        G       = sum_k gamma^k alive_k r_k,   m = sum_k alive_k,   bootstrap from step m - 1.

    Arguments:
        - steps: n transitions, oldest first, each a dict of (B, ...) leaves as in :func:`nstep_transitions`.
        - gamma: discount in [0, 1].
    Returns:
        dict of (B, ...) leaves: the first step's, with ``reward`` = G, ``next_obs`` / ``terminated`` / ``truncated``
        of step m - 1 and ``discount`` = gamma^m.
    """
    first = steps[0]
    reward = torch.stack([s["reward"] for s in steps]).double()  # (n, B)
    done = torch.stack([s["terminated"].bool() | s["truncated"].bool() for s in steps])
    alive = torch.ones_like(reward)
    alive[1:] = (~done[:-1]).double().cumprod(0)
    powers = torch.pow(torch.tensor(float(gamma), dtype=torch.float64, device=reward.device),
                       torch.arange(len(steps), dtype=torch.float64, device=reward.device)).unsqueeze(1)
    length = alive.sum(0)  # m, (B,)
    last = (length.long() - 1).unsqueeze(0)  # (1, B)
    sample = {key: value for key, value in first.items() if key not in LAST_STEP_KEYS and key != "reward"}
    for key in (k for k in LAST_STEP_KEYS if k in first):
        sample[key] = tree_map(lambda x: x[0], at_steps(tree_stack([s[key] for s in steps]), last))
    sample["reward"] = (powers * alive * reward).sum(0).to(first["reward"].dtype)
    sample["discount"] = torch.pow(powers.new_tensor(float(gamma)), length).to(first["reward"].dtype)
    return sample


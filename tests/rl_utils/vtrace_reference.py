"""Slow, obvious V-trace references for the tests of rl_utils.vtrace and rl_utils.vtrace_dingengine_compat."""
import math

import torch


def ref_vtrace_1d(rho_bar, c, pg_rho, discounts, rewards, values, bootstrap):
    """IMPALA eq. (1) on one trajectory of Python floats, with per-step discounts in place of gamma^(t-s):
    v_s = V_s + sum_{t>=s} (prod_{i=s}^{t-1} gamma_i c_i) delta_t,  delta_t = rho_bar_t (r_t + gamma_t V_{t+1} - V_t),
    adv_s = pg_rho_s (r_s + gamma_s v_{s+1} - V_s), with V_T = v_T = bootstrap."""
    T = len(rewards)
    V = list(values) + [bootstrap]
    delta = [rho_bar[t] * (rewards[t] + discounts[t] * V[t + 1] - V[t]) for t in range(T)]
    vs = []
    for s in range(T):
        total = V[s]
        for t in range(s, T):
            coef = 1.0
            for i in range(s, t):
                coef *= discounts[i] * c[i]
            total += coef * delta[t]
        vs.append(total)
    vs_next = vs[1:] + [bootstrap]
    adv = [pg_rho[s] * (rewards[s] + discounts[s] * vs_next[s] - V[s]) for s in range(T)]
    return vs, adv


def ref_from_importance_weights(log_rhos, discounts, rewards, values, bootstrap, rho_clip, pg_clip, c_clip, lambda_):
    """Runs the 1-d reference on every (B, ...) column; returns float64 tensors shaped like ``values``."""
    clip = lambda x, m: x if m is None else min(x, m)  # noqa: E731
    cols = lambda x: x.double().reshape(x.shape[0], -1).T.tolist()  # noqa: E731
    vs_cols, adv_cols = [], []
    for lr, d, r, v, b in zip(cols(log_rhos), cols(discounts), cols(rewards), cols(values),
                              bootstrap.double().reshape(-1).tolist()):
        rho = [math.exp(x) for x in lr]
        vs, adv = ref_vtrace_1d([clip(x, rho_clip) for x in rho], [lambda_ * clip(x, c_clip) for x in rho],
                                [clip(x, pg_clip) for x in rho], d, r, v, b)
        vs_cols.append(vs)
        adv_cols.append(adv)
    back = lambda c: torch.tensor(c, dtype=torch.float64).T.reshape(values.shape)  # noqa: E731
    return back(vs_cols), back(adv_cols)

"""UnrollPolicy, the base of IMPALA and ACER: the episode-end convention on a hand-built batch of two unrolls, and
that both algorithms' value targets follow it (the same cuts, the same bootstraps from the true final observation).

The batch (T = 4 steps, B = 2 unrolls), with the flags of each step:

    t   unroll 0                       unroll 1
    0   -                              terminated
    1   truncated   (final obs F10)    terminated and truncated (a terminal state at the time limit)
    2   -                              -
    3   - (x_T after it)               truncated   (final obs F31, which is also x_T)

By gymnasium's semantics, worked out by hand:
    done (the recursion stops after t):       t0 [0, 1]  t1 [1, 1]  t2 [0, 0]  t3 [0, 1]
    bootstrapped (target adds gamma V(final)): t0 [0, 0]  t1 [1, 0]  t2 [0, 0]  t3 [0, 1]
"""
import torch
from easydict import EasyDict

import ding_lite.policy.impala as impala_module
import ding_lite.rl_utils.acer as acer_math
from ding_lite.policy import ACERPolicy, IMPALAPolicy

T, B, OBS_DIM, N_ACTIONS, GAMMA = 4, 2, 3, 2, 0.9
DONE = [[False, True], [True, True], [False, False], [False, True]]
BOOTSTRAPPED = [[False, False], [True, False], [False, False], [False, True]]


def make_policy(cls, model_type):
    cfg = cls.default_config()
    cfg.action_space = "discrete"
    cfg.model = EasyDict(type=model_type, import_names=[], obs_shape=OBS_DIM, action_shape=N_ACTIONS,
                         action_space="discrete", encoder_hidden_size_list=[8])
    cfg.learn.discount_factor = GAMMA
    torch.manual_seed(0)
    return cls(cfg)


def obs_value(t, b):
    return float(10 * t + b + 1)


def hand_batch():
    """The batch as the buffer returns it, leaves (B, T, ...); every observation is a constant vector whose value
    names it: x_t of unroll b is 10 t + b + 1, a final observation -(10 t + b + 1), x_T 100 + b."""
    obs = torch.tensor([[obs_value(t, b) for t in range(T)] for b in range(B)])
    next_obs = torch.cat([obs[:, 1:], torch.tensor([[100.0], [101.0]])], dim=1)
    terminated = torch.zeros(B, T, dtype=torch.bool)
    truncated = torch.zeros(B, T, dtype=torch.bool)
    terminated[1, 0] = True
    next_obs[1, 0] = -obs_value(0, 1)  # a terminal observation (never evaluated)
    truncated[0, 1] = True
    next_obs[0, 1] = -obs_value(1, 0)  # F10
    terminated[1, 1] = truncated[1, 1] = True
    next_obs[1, 1] = -obs_value(1, 1)
    truncated[1, 3] = True
    next_obs[1, 3] = -obs_value(3, 1)  # F31 = x_T of unroll 1
    g = torch.Generator().manual_seed(3)
    expand = lambda x: x.unsqueeze(-1).expand(B, T, OBS_DIM).clone()  # noqa: E731
    return {"obs": expand(obs), "next_obs": expand(next_obs), "action": torch.randint(N_ACTIONS, (B, T), generator=g),
            "logit": torch.randn(B, T, N_ACTIONS, generator=g), "reward": torch.randn(B, T, generator=g),
            "terminated": terminated, "truncated": truncated}


def test_masks_model_rows_and_next_values_by_hand():
    policy = make_policy(IMPALAPolicy, "vac")
    batch = policy._unroll_batch(hand_batch())
    assert (batch.T, batch.B) == (T, B)
    assert batch.done.tolist() == DONE
    assert batch.bootstrapped.tolist() == BOOTSTRAPPED
    assert batch.data["reward"].shape == (T, B)  # time-major
    rows = batch.model_in[:, 0].tolist()
    steps = [obs_value(t, b) for t in range(T) for b in range(B)]  # row t * B + b
    assert rows == steps + [100.0, -obs_value(3, 1)] + [-obs_value(1, 0), -obs_value(3, 1)]
    assert batch.flat_obs[:, 0].tolist() == steps
    v = torch.arange(len(rows), dtype=torch.float32)
    assert batch.steps(v).tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert batch.last(v).tolist() == [8, 9] and batch.finals(v).tolist() == [10, 11]
    # V after each step where a target bootstraps: V(F10) at (1, 0); V(x_T) on the last row (x_T of unroll 1 is F31).
    assert batch.next_values(v).tolist() == [[0, 0], [10, 0], [0, 0], [8, 9]]


def test_impala_targets_follow_the_convention(monkeypatch):
    policy = make_policy(IMPALAPolicy, "vac")
    calls = []
    vtrace = impala_module.from_importance_weights
    monkeypatch.setattr(impala_module, "from_importance_weights",
                        lambda *args, **kw: calls.append([a.clone() for a in args]) or vtrace(*args, **kw))
    data = hand_batch()
    with torch.no_grad():
        v = lambda x: policy.model(torch.full((1, OBS_DIM), x), mode="compute_critic")["value"].item()  # noqa: E731
        v_f10, v_f31, v_xt0 = v(-obs_value(1, 0)), v(-obs_value(3, 1)), v(100.0)
    policy.learn_mode.forward(data)
    _, discounts, rewards, _, bootstrap_value = calls[0]
    torch.testing.assert_close(discounts, GAMMA * torch.tensor([[1.0, 0], [0, 0], [1, 1], [1, 0]]))
    added = torch.zeros(T, B)
    added[1, 0], added[3, 1] = GAMMA * v_f10, GAMMA * v_f31  # truncated: r + gamma V(final obs); terminated: r
    torch.testing.assert_close(rewards, data["reward"].T + added)
    torch.testing.assert_close(bootstrap_value, torch.tensor([v_xt0, v_f31]))
    assert min(abs(v_f10), abs(v_f31)) > 1e-4  # the zeros above are meaningful


def test_acer_targets_follow_the_convention(monkeypatch):
    policy = make_policy(ACERPolicy, "acer")
    calls = []
    retrace = acer_math.acer_retrace_targets
    monkeypatch.setattr(acer_math, "acer_retrace_targets",
                        lambda *args: calls.append([a.clone() for a in args]) or retrace(*args))
    data = hand_batch()
    with torch.no_grad():
        def v(x):
            out = policy.model(torch.full((1, OBS_DIM), x), mode="compute_actor_critic")
            return acer_math.acer_state_values(out["logit"], out["q_value"]).item()
        v_f10, v_f31, v_xt0 = v(-obs_value(1, 0)), v(-obs_value(3, 1)), v(100.0)
    policy.learn_mode.forward(data)
    *_, discounts, bootstrap = calls[0]
    # The same cuts as IMPALA's, and the unroll's end (where IMPALA passes V(x_T) separately) is cut too.
    torch.testing.assert_close(discounts, GAMMA * torch.tensor([[1.0, 0], [0, 0], [1, 1], [0, 0]]))
    expected = torch.zeros(T, B)
    expected[1, 0], expected[3, 0], expected[3, 1] = GAMMA * v_f10, GAMMA * v_xt0, GAMMA * v_f31
    torch.testing.assert_close(bootstrap, expected)
    assert min(abs(v_f10), abs(v_f31), abs(v_xt0)) > 1e-4  # the zeros above are meaningful

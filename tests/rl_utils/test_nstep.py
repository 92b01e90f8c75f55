"""n-step returns (ding_lite/rl_utils/nstep.py) against a slow, obvious loop written here: random rewards with
terminations, truncations, episode ends inside the window and windows cut by the segment's end."""
import pytest
import torch

from ding_lite.rl_utils.nstep import at_steps, nstep_first_transition, nstep_return, nstep_transitions


def reference(reward, terminated, truncated, next_obs, gamma, n):
    """For every start (t, b): walk forward k = 0 .. n-1, add gamma^k r, stop after an episode end or the segment's
    last step. Returns per-(t, b) G, m, next_obs and terminated of the bootstrap step, gamma^m."""
    T, B = reward.shape
    out = {"G": torch.zeros(T, B, dtype=torch.float64), "m": torch.zeros(T, B, dtype=torch.long),
           "next_obs": torch.zeros_like(next_obs), "terminated": torch.zeros(T, B, dtype=torch.bool),
           "truncated": torch.zeros(T, B, dtype=torch.bool), "discount": torch.zeros(T, B, dtype=torch.float64)}
    for b in range(B):
        for t in range(T):
            g, m, j = 0.0, 0, t
            while True:
                g += gamma ** m * float(reward[j, b])
                m += 1
                if terminated[j, b] or truncated[j, b] or m == n or j == T - 1:
                    break
                j += 1
            out["G"][t, b], out["m"][t, b] = g, m
            out["next_obs"][t, b] = next_obs[j, b]
            out["terminated"][t, b], out["truncated"][t, b] = terminated[j, b], truncated[j, b]
            out["discount"][t, b] = gamma ** m
    return out


def random_segment(T, B, seed, p_end=0.15):
    g = torch.Generator().manual_seed(seed)
    terminated = torch.rand(T, B, generator=g) < p_end
    truncated = torch.rand(T, B, generator=g) < p_end  # some steps are both: terminated wins in the target
    return {
        "obs": torch.randn(T, B, 3, generator=g),
        "action": torch.randint(0, 4, (T, B), generator=g),
        "reward": torch.randn(T, B, generator=g),
        "next_obs": torch.randn(T, B, 3, generator=g),
        "terminated": terminated,
        "truncated": truncated,
    }


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nstep_transitions_match_the_reference_loop(n, seed):
    seg = random_segment(T=17, B=5, seed=seed)
    gamma = 0.93
    ref = reference(seg["reward"], seg["terminated"], seg["truncated"], seg["next_obs"], gamma, n)
    assert (ref["terminated"] | ref["truncated"]).any() and (ref["m"] < n).any() or n == 1
    out = nstep_transitions(seg, gamma, n)
    torch.testing.assert_close(out["reward"].double(), ref["G"], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out["discount"].double(), ref["discount"], rtol=1e-6, atol=0)
    assert torch.equal(out["next_obs"], ref["next_obs"])
    assert torch.equal(out["terminated"], ref["terminated"]) and torch.equal(out["truncated"], ref["truncated"])
    assert torch.equal(out["obs"], seg["obs"]) and torch.equal(out["action"], seg["action"])
    nret = nstep_return(seg["reward"], seg["terminated"] | seg["truncated"], gamma, n)
    assert torch.equal(nret.length, ref["m"])
    assert torch.equal(nret.last, torch.arange(17).unsqueeze(1) + ref["m"] - 1)


def test_hand_worked_window():
    """One env, gamma = 0.5, n = 3, rewards 1, 2, 4, 8, 16, 32; step 2 truncated (time limit), step 4 terminated.

    t=0: 1 + .5*2 + .25*4 = 3, m=3, bootstrap from next_obs[2] (the true final obs of the truncated episode);
    t=1: 2 + .5*4 = 4, m=2, next_obs[2];  t=2: 4, m=1, next_obs[2];
    t=3: 8 + .5*16 = 16, m=2, terminated at step 4 (no bootstrap);  t=4: 16, m=1, terminated;
    t=5: 32, m=1 (the segment ends), next_obs[5], not terminated."""
    seg = {"reward": torch.tensor([1., 2., 4., 8., 16., 32.]).unsqueeze(1),
           "terminated": torch.tensor([0, 0, 0, 0, 1, 0], dtype=torch.bool).unsqueeze(1),
           "truncated": torch.tensor([0, 0, 1, 0, 0, 0], dtype=torch.bool).unsqueeze(1),
           "next_obs": torch.arange(6.).view(6, 1, 1) + 100, "obs": torch.arange(6.).view(6, 1, 1)}
    out = nstep_transitions(seg, 0.5, 3)
    assert out["reward"].squeeze(1).tolist() == [3., 4., 4., 16., 16., 32.]
    assert out["discount"].squeeze(1).tolist() == [0.125, 0.25, 0.5, 0.25, 0.5, 0.5]
    assert out["next_obs"].flatten().tolist() == [102., 102., 102., 104., 104., 105.]
    assert out["terminated"].squeeze(1).tolist() == [False, False, False, True, True, False]
    assert out["truncated"].squeeze(1).tolist() == [True, True, True, False, False, False]


def test_n_equal_one_is_the_transition_itself():
    seg = random_segment(T=9, B=4, seed=3)
    out = nstep_transitions(seg, 0.99, 1)
    for key in seg:
        assert torch.equal(out[key], seg[key]), key
    assert torch.allclose(out["discount"], torch.full((9, 4), 0.99))


def test_starts_select_and_nested_next_obs():
    seg = random_segment(T=6, B=3, seed=4)
    seg["next_obs"] = {"a": seg["next_obs"], "b": {"c": seg["next_obs"][..., 0]}}
    full = nstep_transitions(seg, 0.9, 4)
    first = nstep_transitions(seg, 0.9, 4, starts=[0])
    assert torch.equal(first["reward"], full["reward"][:1])
    assert torch.equal(first["next_obs"]["a"], full["next_obs"]["a"][:1])
    assert torch.equal(first["next_obs"]["b"]["c"], full["next_obs"]["b"]["c"][:1])
    assert torch.equal(at_steps(torch.arange(12).view(4, 3), torch.tensor([[3, 0, 1]])), torch.tensor([[9, 1, 5]]))


@pytest.mark.parametrize("n", [1, 2, 3, 6])
@pytest.mark.parametrize("seed", range(4))
def test_the_first_transition_of_a_window_matches_the_reference(n, seed):
    """SAC's per-step path: n consecutive steps (B, ...) each -> the n-step sample of the first, as the reference."""
    seg = random_segment(T=n, B=32, seed=seed, p_end=0.1)
    gamma = 0.9
    ref = reference(seg["reward"], seg["terminated"], seg["truncated"], seg["next_obs"], gamma, n)
    steps = [{k: v[t] for k, v in seg.items()} for t in range(n)]
    out = nstep_first_transition(steps, gamma)
    torch.testing.assert_close(out["reward"].double(), ref["G"][0], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out["discount"].double(), ref["discount"][0], rtol=1e-6, atol=0)
    assert torch.equal(out["next_obs"], ref["next_obs"][0])
    assert torch.equal(out["terminated"], ref["terminated"][0]) and torch.equal(out["truncated"], ref["truncated"][0])
    assert torch.equal(out["obs"], seg["obs"][0]) and torch.equal(out["action"], seg["action"][0])
    same = nstep_transitions(seg, gamma, n, starts=[0])
    assert set(out) == set(same) and all(torch.equal(out[k], same[k][0]) for k in out)
    if n > 1 and seed == 0:
        assert (ref["m"][0] < n).any() and (ref["m"][0] == n).any()


@pytest.mark.parametrize("n", [0, -1, 2.5])
def test_bad_n_is_refused(n):
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        nstep_return(torch.zeros(3, 1), torch.zeros(3, 1, dtype=torch.bool), 0.9, n)

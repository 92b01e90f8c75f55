"""The recurrent core (``policy.model.core='lstm'``): the cell, the replay of unrolls with resets at episode ends,
and VAC's and ACER's recurrent passes on MLP and conv encoders, each against step-by-step acting."""
import pytest
import torch
from easydict import EasyDict

from ding_lite.model.acer import ACER
from ding_lite.model.vac import VAC
from ding_lite.torch_utils.recurrent import LSTMCore, lstm_unroll, replay_rows
from ding_lite.utils import ConfigError

IMAGE = dict(space="box", shape=[4, 84, 84], dtype="uint8")


def test_cell_matches_torch_lstm_cell():
    torch.manual_seed(0)
    core = LSTMCore(5, 7)
    ref = torch.nn.LSTMCell(5, 7)
    with torch.no_grad():  # [x, h] @ W^T = x @ W_ih^T + h @ W_hh^T, gates i, f, g, o in both
        ref.weight_ih.copy_(core.gates.weight[:, :5])
        ref.weight_hh.copy_(core.gates.weight[:, 5:])
        ref.bias_ih.copy_(core.gates.bias)
        ref.bias_hh.zero_()
    x, state = torch.randn(3, 5), torch.randn(3, 2, 7)
    out, nxt = core(x, state)
    h, c = ref(x, (state[:, 0], state[:, 1]))
    torch.testing.assert_close(out, h)
    torch.testing.assert_close(nxt, torch.stack([h, c], 1))
    assert core.gates.bias[7:14].eq(1).all() and core.gates.bias[:7].eq(0).all()  # forget-gate bias 1


def test_unroll_resets_only_the_columns_that_ended():
    torch.manual_seed(0)
    core = LSTMCore(3, 4)
    T, B = 5, 3
    x, s0 = torch.randn(T, B, 3), torch.randn(B, 2, 4)
    done = torch.zeros(T, B, dtype=torch.bool)
    done[1, 0] = done[3, 2] = done[4, 1] = True
    out, after, final = lstm_unroll(core, x, s0, done)
    for b in range(B):  # column by column, by hand
        s = s0[b:b + 1]
        for t in range(T):
            o, s_next = core(x[t, b:b + 1], s)
            torch.testing.assert_close(out[t, b], o[0])
            torch.testing.assert_close(after[t, b], s_next[0])  # before the reset
            s = torch.zeros_like(s_next) if done[t, b] else s_next
        torch.testing.assert_close(final[b], s[0])
    assert final[1].eq(0).all() and not final[0].eq(0).all() and not final[2].eq(0).all()


def test_replay_rows_extra_rows_continue_from_the_state_before_the_reset():
    torch.manual_seed(0)
    core = LSTMCore(3, 4)
    T, B = 3, 2
    feature, s0 = torch.randn(T * B + 3, 3), torch.randn(B, 2, 4)
    done = torch.tensor([[False, True], [False, False], [True, False]])
    extra = torch.tensor([4, 5, 1])  # x_T of columns 0, 1 (t = 2), then the final obs of step (0, 1)
    out, _ = replay_rows(core, feature, s0, done, extra)
    _, after, _ = lstm_unroll(core, feature[:T * B].view(T, B, 3), s0, done)
    for row, flat in zip(range(T * B, T * B + 3), extra.tolist()):
        torch.testing.assert_close(out[row], core(feature[row:row + 1], after.view(-1, 2, 4)[flat:flat + 1])[0][0])
    with pytest.raises(ValueError, match="extra_state_index"):
        replay_rows(core, feature, s0, done, None)


def _models():
    """(name, model, observations (T*B + E rows)) for VAC and ACER on MLP and conv encoders."""
    torch.manual_seed(0)
    n = 3 * 2 + 2
    vec = torch.randn(n, 4)
    img = torch.randint(0, 256, (n, 4, 84, 84), dtype=torch.uint8)
    conv = dict(obs_space=IMAGE, conv_channels=[4, 4, 4], conv_hidden_size=16)
    return [
        ("vac_mlp_shared", VAC(4, 2, core="lstm", core_size=8), vec),
        ("vac_mlp_separate", VAC(4, 2, "continuous", share_encoder=False, core="lstm", core_size=8), vec),
        ("vac_conv", VAC([4, 84, 84], 3, core="lstm", core_size=8, **conv), img),
        ("acer_mlp_separate", ACER(4, 2, "discrete", core="lstm", core_size=8), vec),
        ("acer_mlp_shared", ACER(4, 2, "discrete", share_encoder=True, core="lstm", core_size=8), vec),
        ("acer_conv", ACER([4, 84, 84], 3, "discrete", core="lstm", core_size=8, **conv), img),
    ]


@pytest.mark.parametrize("case", range(6))
def test_model_replay_equals_acting_step_by_step(case):
    """The learner's pass (T=3 steps of B=2 unrolls, a reset in column 1 after step 0, then x_T of both columns)
    gives, row by row, what one-step acting computes from the carried state."""
    name, model, obs = _models()[case]
    T, B = 3, 2
    s0 = torch.randn(B, *model.state_shape)
    done = torch.tensor([[False, True], [False, False], [False, False]])
    extra = torch.tensor([4, 5])
    if isinstance(model, VAC):
        replay = model.forward_unroll(obs, s0, done, extra)
        key = "value"
    else:
        replay = model(obs, mode="compute_actor_critic", state=s0, done=done, extra_state_index=extra)
        key = "q_value"
    state = s0
    for t in range(T + 1):
        rows = obs[t * B:(t + 1) * B]
        step = model(rows, mode="compute_actor_critic", state=state)
        logit = step["logit"]["mu"] if isinstance(step["logit"], dict) else step["logit"]
        got = replay["logit"]["mu"] if isinstance(replay["logit"], dict) else replay["logit"]
        torch.testing.assert_close(got[t * B:(t + 1) * B], logit, msg=f"{name} logit t={t}")
        torch.testing.assert_close(replay[key][t * B:(t + 1) * B], step[key], msg=f"{name} {key} t={t}")
        if t < T:
            state = step["state"] * (~done[t]).float().view(B, 1, 1)
    torch.testing.assert_close(replay["state"], state, msg=f"{name}: the state after the unrolls")
    assert model(obs[:B], mode="compute_actor", state=s0)["state"].shape == (B, *model.state_shape)


def test_acting_advances_a_separate_critic_core():
    """Acting computes only the actor's outputs but must advance the critic's LSTM too: its state is stored."""
    torch.manual_seed(0)
    for model in (VAC(4, 2, share_encoder=False, core="lstm", core_size=8),
                  ACER(4, 2, "discrete", core="lstm", core_size=8)):
        obs = torch.randn(2, 4)
        actor_only = model(obs, mode="compute_actor")["state"]
        both = model(obs, mode="compute_actor_critic")["state"]
        torch.testing.assert_close(actor_only, both)
        assert actor_only.shape == (2, 4, 8) and not actor_only[:, 2:].eq(0).all()


def test_average_actor_replays_its_own_core():
    torch.manual_seed(0)
    model = ACER(4, 2, "discrete", core="lstm", core_size=8)
    avg = model.make_average_actor()
    assert avg.core is not model.actor.core and not any(p.requires_grad for p in avg.parameters())
    obs, s0 = torch.randn(6, 4), torch.randn(2, 4, 8)
    done = torch.zeros(3, 2, dtype=torch.bool)
    a = model.compute_actor(obs, actor=avg, state=s0, done=done)["logit"]
    b = model.compute_actor(obs, state=s0, done=done)["logit"]
    torch.testing.assert_close(a, b)  # a fresh copy: the same function of the same stored states


@pytest.mark.parametrize("model_cls", [VAC, ACER])
def test_config_errors_name_the_key(model_cls):
    base = dict(activation="relu", sigma_type="independent", encoder_hidden_size_list=[8], actor_head_hidden_size=8,
                critic_head_hidden_size=8, actor_head_layer_num=1, critic_head_layer_num=1, init_sigma=1.0,
                encoder_type="auto", conv_channels=None, conv_hidden_size=None, share_encoder=True,
                action_space="discrete", sdn_n_samples=5)
    model_cls.check_config(EasyDict(base, core="lstm", core_size=16), "policy.model")
    with pytest.raises(ConfigError, match=r"policy\.model\.core='gru': must be None \(feed-forward\) or 'lstm'"):
        model_cls.check_config(EasyDict(base, core="gru", core_size=16), "policy.model")
    with pytest.raises(ConfigError, match=r"policy\.model\.core_size=0: must be a positive int"):
        model_cls.check_config(EasyDict(base, core="lstm", core_size=0), "policy.model")

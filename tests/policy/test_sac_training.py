"""SACPolicy and DiscreteSACPolicy, part 2 (part 1 is test_sac.py): how alpha is tuned, which loss moves which
parameters, checkpoints and the temperature travelling with the model, config errors and a short serial run.
"""
import copy
import json
import math
import os

import pytest
import torch

import ding_lite.rl_utils.sac as S
from ding_lite.config import read_config_file
from ding_lite.entry import serial_pipeline
from ding_lite.entry.build import compile_input
from ding_lite.policy.sac import SACPolicy
from ding_lite.utils import ConfigError
from sac_helpers import (
    ACTOR_LOSS_FN, ALL, CASES, CONFIGS, CRITIC_TARGET_FN, HIGH_TARGET, LOW_TARGET, Recorder, SMALL, actor_params,
    assert_tree_equal, critic_params, flat_action, log_alpha, max_change, set_log_alpha
)



# --------------------------------------------------------------------------------------------------------- 5. alpha
def discrete_entropy_now(sac, obs):
    """The exact mean entropy of the discrete policy at ``obs``, computed here from the model."""
    model = sac.policy.model
    with torch.no_grad():
        if sac.case == "discrete":
            log_probs = torch.log_softmax(model.compute_actor(obs)["logit"], -1)
        else:
            alpha = log_alpha(sac.policy).exp()[0]
            log_probs = torch.log_softmax(model.compute_critic(obs).min(0).values / alpha, -1)
    return -(log_probs.exp() * log_probs).sum(-1).mean().item()


@pytest.mark.parametrize("target", ["default", "low", "high"])
@pytest.mark.parametrize("case", ALL)
def test_auto_alpha_moves_against_the_entropy_gap(case, target, make):
    target_entropy = None if target == "default" else {"low": LOW_TARGET, "high": HIGH_TARGET}[target][case]
    sac = make(case, {"policy.learn.target_entropy": target_entropy})
    learn = sac.cfg.policy.learn
    batch = sac.batch()
    before = log_alpha(sac.policy)
    exact = discrete_entropy_now(sac, batch["obs"]) if case in ("discrete", "boltzmann") else None
    info = sac.learn(batch)
    delta = log_alpha(sac.policy) - before
    if case == "mixed":
        entropies = [info["entropy_discrete"], info["entropy"]]
        defaults = [learn.target_entropy_ratio * math.log(3), -2.0]
    elif case == "continuous":
        entropies, defaults = [info["entropy"]], [-1.0]
    else:
        assert info["entropy"] == pytest.approx(exact, abs=1e-5)
        entropies, defaults = [info["entropy"]], [learn.target_entropy_ratio * math.log(2)]
    targets = defaults if target_entropy is None else list(target_entropy) if case == "mixed" else [target_entropy]
    assert delta.shape == (len(targets),)
    for d, h, h_target in zip(delta.tolist(), entropies, targets):
        # Adam's first step: lr * sign(gradient), gradient = entropy - target entropy
        assert d == pytest.approx(-learn.learning_rate_alpha * math.copysign(1.0, float(h) - h_target), rel=1e-3)


@pytest.mark.parametrize("case", ALL)
def test_default_target_entropies(case, make, monkeypatch):
    ratio = 0.7
    sac = make(case, {"policy.learn.target_entropy_ratio": ratio})
    sampled = Recorder(monkeypatch, "sac_alpha_loss")
    exact = Recorder(monkeypatch, "sac_alpha_loss_from_entropy")
    # tell the two alphas of a mixed action apart by their values: [discrete, continuous]
    set_log_alpha(sac.policy, [-1.0, -3.0] if case == "mixed" else [-1.0])
    sac.learn(sac.batch())
    if case == "continuous":
        assert not exact.calls and [c["target_entropy"] for c in sampled.calls] == [-1.0]  # -dim(A)
    elif case == "mixed":
        (d,), (c,) = exact.calls, sampled.calls
        assert d["target_entropy"] == pytest.approx(ratio * math.log(3)) and float(d["log_alpha"]) == -1.0
        assert c["target_entropy"] == -2.0 and float(c["log_alpha"]) == -3.0
    else:
        (d,) = exact.calls
        assert not sampled.calls and d["target_entropy"] == pytest.approx(ratio * math.log(2))


@pytest.mark.parametrize("case", ["continuous", "boltzmann", "mixed"])
def test_fixed_alpha(case, make, monkeypatch):
    alpha = 0.05
    sac = make(case, {"policy.learn.auto_alpha": False, "policy.learn.alpha": alpha})
    n = 2 if case == "mixed" else 1
    rec = Recorder(monkeypatch, CRITIC_TARGET_FN[case])
    for _ in range(3):
        info = sac.learn(sac.batch())
        assert "alpha_loss" not in info and float(info["alpha"]) == pytest.approx(alpha)
    assert torch.equal(log_alpha(sac.policy), torch.full((n,), math.log(alpha)))
    names = ["alpha_discrete", "alpha_continuous"] if case == "mixed" else ["alpha"]
    for call in rec.calls:
        for name in names:
            assert float(call[name]) == pytest.approx(alpha)


@pytest.mark.parametrize("case", ["continuous", "mixed"])
def test_max_log_alpha_caps_it(case, make):
    start, cap, lr = math.log(0.2), math.log(0.2) + 0.15, 0.1
    # targets above the entropy the actor can have with its std capped at exp(-1): every alpha rises
    sac = make(case, {"policy.learn.target_entropy": HIGH_TARGET[case], "policy.learn.learning_rate_alpha": lr,
                      "policy.learn.max_log_alpha": cap, "policy.model.log_std_max": -1.0})
    sac.learn(sac.batch())
    torch.testing.assert_close(log_alpha(sac.policy), torch.full_like(log_alpha(sac.policy), start + lr), rtol=0,
                               atol=1e-4)  # below the cap: a free Adam step up
    sac.learn(sac.batch())
    assert torch.equal(log_alpha(sac.policy), torch.full_like(log_alpha(sac.policy), cap))


# ------------------------------------------------------------------------ 6. which loss moves which parameters
def flipped(monkeypatch, name):
    fn = getattr(S, name)
    monkeypatch.setattr(S, name, lambda *args, **kwargs: -fn(*args, **kwargs))


@pytest.mark.parametrize("case", ALL)
def test_each_loss_moves_only_its_own_parameters(case, make, monkeypatch):
    """From the same state and random numbers, flipping the sign of one loss changes only its own parameters.
    This is autograd's wiring; the hand-written continuous update's gradients are checked against autograd's in
    test_sac_manual.py."""
    sac = make(case, {"policy.learn.manual_update": False} if case == "continuous" else None)
    batch, state = sac.batch(), sac.state()

    def step(flip=None):
        sac.policy.learn_mode.load_state_dict(copy.deepcopy(state))
        with monkeypatch.context() as m:
            for name in flip or []:
                flipped(m, name)
            torch.manual_seed(123)
            sac.learn(batch)
        model = sac.policy.model
        return {"critic": critic_params(sac.policy),
                "actor": actor_params(sac.policy) if model.actor is not None else {},
                "log_alpha": {"log_alpha": log_alpha(sac.policy)}}

    base = step()
    losses = {"critic": ["sac_critic_loss"], "log_alpha": ["sac_alpha_loss", "sac_alpha_loss_from_entropy"]}
    if case != "boltzmann":
        losses["actor"] = [ACTOR_LOSS_FN[case]]
    for owner, names in losses.items():
        moved = step(names)
        for part in base:
            if part == owner:
                assert max_change(base[part], moved[part]) > 0, f"flipping the {owner} loss did not move it"
            else:
                assert_tree_equal(moved[part], base[part], f"{part} after flipping the {owner} loss")


# ----------------------------------------------------------------------------------------------- 7. checkpoints
@pytest.mark.parametrize("case", ALL)
def test_state_dict_round_trip_gives_the_same_next_update(case, make, tmp_path):
    overrides = {"policy.learn.target_update_period": 2, "policy.learn.target_theta": 0.5}
    a = make(case, overrides)
    batches = [a.batch() for _ in range(3)]
    a.learn(batches[0])  # learn_steps 1: the next step updates the targets, a fresh counter would not
    torch.save(a.policy.learn_mode.state_dict(), tmp_path / "ckpt.pth.tar")
    state = torch.load(tmp_path / "ckpt.pth.tar", weights_only=True)
    assert set(state) >= {"model", "target_critic", "optimizer"} and "log_alpha" in state["model"]

    torch.manual_seed(1)  # other initial weights
    b = type(a.policy)(copy.deepcopy(a.cfg.policy))
    assert max_change(critic_params(a.policy), critic_params(b)) > 0
    b.learn_mode.load_state_dict(state)
    for batch in batches[1:]:
        torch.manual_seed(7)
        info_a = a.learn(batch)
        torch.manual_seed(7)
        info_b = b.learn_mode.forward(copy.deepcopy(batch))
        assert_tree_equal(info_a, info_b, "info")
        assert_tree_equal(a.policy.learn_mode.state_dict(), b.learn_mode.state_dict())
    # and the round trip of a checkpoint that was trained further still loads
    torch.save(b.learn_mode.state_dict(), tmp_path / "ckpt2.pth.tar")
    a.policy.learn_mode.load_state_dict(torch.load(tmp_path / "ckpt2.pth.tar", weights_only=True))
    assert_tree_equal(a.policy.learn_mode.state_dict(), b.learn_mode.state_dict())


# ------------------------------------------------------------------- 7b. the temperature travels with the model
def trained(make, case, updates=10):
    """A learner whose (auto-tuned) alpha has moved well away from its initial value (it falls fast)."""
    sac = make(case, {"policy.learn.learning_rate_alpha": 0.05, "policy.learn.target_entropy": LOW_TARGET[case]})
    for _ in range(updates):
        sac.learn(sac.batch())
    initial = torch.full_like(log_alpha(sac.policy), math.log(sac.cfg.policy.learn.alpha))
    assert (log_alpha(sac.policy) - initial).abs().min() > 0.3, "alpha did not move: the test would prove nothing"
    return sac


def sampled_actions(policy, obs, seed=5):
    torch.manual_seed(seed)
    return flat_action(policy.collect_mode.forward(obs)["action"])


@pytest.mark.parametrize("case", ["boltzmann", "mixed"])
def test_a_collector_loading_the_published_weights_acts_with_the_learners_alpha(case, make):
    """What a parallel collector does: a fresh collect-mode policy loads ``model.state_dict()`` of the learner and
    must sample the learner's Boltzmann policy, exp(Q/alpha) with the learner's alpha, not the initial one."""
    sac = trained(make, case)
    cfg = copy.deepcopy(sac.cfg.policy)
    template = type(sac.policy)(cfg, enable_field=()).model.state_dict()  # parallel's shared-weights template
    assert set(template) == set(sac.policy.model.state_dict())
    collector = type(sac.policy)(cfg, enable_field=("collect",))
    collector.model.load_state_dict(sac.policy.model.state_dict())
    obs = sac.batch(64)["obs"].repeat(8, 1)  # 512 draws
    assert torch.equal(sampled_actions(collector, obs), sampled_actions(sac.policy, obs))
    assert torch.equal(collector.model.log_alpha, log_alpha(sac.policy))
    initial = type(sac.policy)(cfg, enable_field=("collect",))  # the same weights with the initial alpha
    initial.model.load_state_dict({k: v for k, v in sac.policy.model.state_dict().items() if k != "log_alpha"},
                                  strict=False)
    assert not torch.equal(sampled_actions(initial, obs), sampled_actions(sac.policy, obs))


def test_a_user_model_gets_the_temperature_parameter(make):
    sac = make("mixed", {"policy.learn.alpha": 0.3})
    from ding_lite.model.qac import QAC  # noqa: E402  (the user's own instance of the template)
    model = QAC(**{k: v for k, v in sac.cfg.policy.model.items() if k not in ("type", "import_names")})
    assert "log_alpha" not in model.state_dict()
    policy = SACPolicy(copy.deepcopy(sac.cfg.policy), model=model)
    assert policy.model is model
    torch.testing.assert_close(model.log_alpha.detach(), torch.full((2,), math.log(0.3)))
    assert any(p is model.log_alpha for g in policy._optimizer.param_groups for p in g["params"])


def old_format(state):
    """A learn-mode state as written before the temperature moved into the model."""
    state = copy.deepcopy(state)
    state["log_alpha"] = state["model"].pop("log_alpha")
    return state


@pytest.mark.parametrize("case", ["continuous", "mixed"])
def test_a_checkpoint_from_before_the_change_still_loads(case, make, tmp_path):
    sac = trained(make, case)
    old = old_format(sac.state())
    fresh = type(sac.policy)(copy.deepcopy(sac.cfg.policy))
    fresh.learn_mode.load_state_dict(old)
    assert_tree_equal(fresh.learn_mode.state_dict(), sac.state())
    # -m eval loads the model strictly
    evaluator = type(sac.policy)(copy.deepcopy(sac.cfg.policy), enable_field=("eval",))
    evaluator.model.load_state_dict(evaluator.checkpoint_model_state(old))
    assert torch.equal(evaluator.model.log_alpha, log_alpha(sac.policy))


def test_eval_pipeline_loads_old_and_new_checkpoints(make, tmp_path):
    """-m eval loads the model strictly: a missing log_alpha (an old checkpoint not filled in) would be an error."""
    from ding_lite.entry.eval import eval_pipeline
    from ding_lite.run import save_checkpoint
    sac = trained(make, "boltzmann")
    main, create = read_config_file(os.path.join(CONFIGS, "cartpole_sac.py"))
    for i, state in enumerate((sac.state(), old_format(sac.state()))):
        path = str(tmp_path / f"ckpt{i}.pth.tar")
        save_checkpoint({"policy": state, "counters": {"train_iter": 10, "env_step": 64}}, path)
        result = eval_pipeline((main, create), path, 0, overrides={**SMALL, **CASES["boltzmann"][1]})
        assert result["train_iter"] == 10 and math.isfinite(result["return_mean"])


# ----------------------------------------------------------------------------------------------- 8. config errors
@pytest.mark.parametrize("config, key, value", [
    ("cartpole_sac", "policy.learn.target_entropy_ratio", 1.5),
    ("cartpole_sac", "policy.learn.target_entropy_ratio", 0.0),
    ("cartpole_sac", "policy.learn.discrete_policy", "foo"),
    ("pendulum_sac", "policy.unroll_len", 4),
    ("pendulum_sac", "policy.learn.target_theta", 0.0),
    ("pendulum_sac", "policy.learn.target_theta", 1.5),
    ("pendulum_sac", "policy.learn.target_update_period", 0),
    ("pendulum_sac", "policy.learn.learning_rate_q", 0.0),
    ("pendulum_sac", "policy.learn.learning_rate_policy", -1e-3),
    ("mixed_sac", "policy.learn.learning_rate_alpha", 0.0),
    ("mixed_sac", "policy.learn.alpha", 0.0),
    ("mixed_sac", "policy.random_collect_size", -1),
    ("cartpole_sac", "policy.model.actor", False),  # SAC decides: learn.discrete_policy='boltzmann' has no actor
])
def test_config_errors_name_the_full_key_path(config, key, value):
    main, create = read_config_file(os.path.join(CONFIGS, f"{config}.py"))
    with pytest.raises(ConfigError) as err:
        compile_input((main, create), 0, {key: value})
    assert str(err.value).startswith(f"{key}="), str(err.value)


# ------------------------------------------------------------------------------------------------ 9. serial run
MIXED_RUN = {**SMALL, "policy.random_collect_size": 200, "policy.eval.evaluator.eval_freq": 200,
             "policy.learn.learner.hook.log_show_after_iter": 100}


@pytest.mark.slow
def test_serial_pipeline_on_mixed_target(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    random_steps = []
    forward = SACPolicy._forward_collect

    def counting_forward(self, obs, random_action=False, **kwargs):
        if random_action:
            random_steps.append(obs.shape[0])
        return forward(self, obs, random_action=random_action, **kwargs)

    monkeypatch.setattr(SACPolicy, "_forward_collect", counting_forward)
    main, create = read_config_file(os.path.join(CONFIGS, "mixed_sac.py"))
    policy = serial_pipeline((main, create), seed=0, max_env_step=600, overrides=MIXED_RUN, quiet=True)
    run_dir = tmp_path / "mixed_sac_seed0"
    with open(run_dir / "result.json") as f:
        result = json.load(f)
    assert result["stop_reason"] == "max_env_step" and result["env_step"] == 600, result
    assert sum(random_steps) == 200  # the warm-up: random_collect_size env steps of uniform actions, once
    cfg = policy.cfg  # every collection of n_sample after the warm-up is followed by update_per_collect updates
    assert result["train_iter"] == (600 - 200) // cfg.collect.n_sample * cfg.learn.update_per_collect
    assert math.isfinite(result["final_return"])
    assert (run_dir / "eval.csv").read_text().count("\n") >= 3  # header, the first and the final evaluation
    ckpt = torch.load(run_dir / "ckpt" / "ckpt_last.pth.tar", weights_only=True)
    assert ckpt["policy"]["model"]["log_alpha"].shape == (2,)  # [discrete, continuous]
    # the saved total_config.py (with the env-derived action_space='mixed' written in) compiles again
    saved = compile_input(read_config_file(str(run_dir / "total_config.py")), 0, None, "again")
    assert saved.policy.action_space == "mixed" and saved.policy.model.action_shape == [3, 2]

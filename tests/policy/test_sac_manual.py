"""The hand-written continuous SAC update (``policy/sac/manual_update.py``, ``policy.learn.manual_update``; compiled:
``policy/sac/compiled_update.py``, ``policy.learn.compile_update``) against the autograd one: from the same
parameters, batch and random numbers, every loss, logged value and parameter gradient must agree, in each setting the
hand-written update covers. Where it does not apply, None (the default) must fall back to autograd and True must be
refused with the key to change.

The autograd update's losses are themselves tested against the paper's equations (tests/rl_utils/test_sac_math.py)
and its wiring in test_sac.py / test_sac_training.py, so agreement here carries those tests over.
"""
import copy
import math
import os

import gymnasium as gym
import pytest
import torch

from ding_lite.config import read_config_file
from ding_lite.entry.build import compile_input, start_process
from ding_lite.envs.obs_space import describe_obs_space
from ding_lite.policy.sac.autograd_update import AutogradUpdate
from ding_lite.policy.sac.compiled_update import AUTO_COMPILE_AFTER, CompileFailed, CompiledUpdate
from ding_lite.policy.sac.manual_update import ManualUpdate
from ding_lite.utils import POLICY_REGISTRY, ConfigError, set_seed

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dizoo_configs", "pendulum_sac.py")
B, OBS, ACT = 48, 5, 3
SMALL = {"policy.model.actor_head_hidden_size": 32, "policy.model.critic_head_hidden_size": 32,
         "policy.learn.batch_size": B}
DICT_SPACE = gym.spaces.Dict(position=gym.spaces.Box(-1, 1, (2, 2)), mode=gym.spaces.Discrete(3),
                             speed=gym.spaces.Box(-5, 5, (1,)))


@pytest.fixture(autouse=True)
def mallopt_calls(monkeypatch):
    """keep_freed_memory's mallopt call (made by the compiled update) recorded instead: it cannot be undone in this
    test process."""
    import ding_lite.torch_utils.malloc as malloc
    calls = []
    monkeypatch.setattr(malloc, "keep_freed_memory", lambda: calls.append("mallopt") or True)
    monkeypatch.setattr(malloc, "_setting", None)
    return calls


def build(manual, overrides=None, obs_space=None, action_space="continuous", device="cpu"):
    """SAC through the real config path on an OBS-dim Box (or ``obs_space``) and an ACT-dim action, no env, on
    ``device``."""
    main, create = read_config_file(CONFIG)
    model = {"policy.model.obs_shape": OBS, "policy.model.action_shape": ACT}
    if obs_space is not None:
        model = {"policy.model.obs_shape": None, "policy.model.obs_space": describe_obs_space(obs_space),
                 "policy.model.action_shape": ACT}
    cfg = compile_input((main, create), 0, {**SMALL, **model, "policy.learn.manual_update": manual,
                                            "policy.cuda": device == "cuda", **(overrides or {})})
    start_process(cfg)  # keep_freed_memory, as a run applies it
    if obs_space is not None:
        from ding_lite.envs.obs_space import obs_shape_of
        cfg.policy.model.obs_shape = obs_shape_of(cfg.policy.model.obs_space)
    cfg.policy.action_space = cfg.policy.model.action_space = action_space
    if action_space == "discrete":
        cfg.policy.model.action_shape = 4
    set_seed(0)
    return POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy)


def random_batch(obs_space=None, seed=1):
    g = torch.Generator().manual_seed(seed)

    def obs():
        if obs_space is None:
            return torch.randn(B, OBS, generator=g)
        return {"position": torch.rand(B, 2, 2, generator=g) * 2 - 1, "mode": torch.randint(3, (B,), generator=g),
                "speed": torch.randn(B, 1, generator=g)}
    return {"obs": obs(), "next_obs": obs(), "action": torch.rand(B, ACT, generator=g) * 2 - 1,
            "reward": torch.randn(B, generator=g), "terminated": torch.rand(B, generator=g) < 0.25,
            "truncated": torch.zeros(B, dtype=torch.bool)}


def one_update(policy, batch):
    """The update's logged values and every parameter's gradient (the optimizer leaves ``.grad`` in place; none where
    the compiled program took the step)."""
    torch.manual_seed(123)
    info = policy.learn_mode.forward(copy.deepcopy(batch))
    grads = {name: p.grad.clone() for name, p in policy.model.named_parameters() if p.grad is not None}
    return info, grads


def assert_same_update(overrides=None, obs_space=None, batch=None, device="cpu"):
    manual = build(True, overrides, obs_space, device=device)
    autograd = build(False, overrides, obs_space, device=device)
    assert isinstance(manual._update, ManualUpdate) and isinstance(autograd._update, AutogradUpdate)
    for (name, p), q in zip(manual.model.named_parameters(), autograd.model.parameters()):
        assert torch.equal(p, q), f"{name}: the two policies start apart"
    batch = batch or random_batch(obs_space)
    (info_m, grads_m), (info_a, grads_a) = one_update(manual, batch), one_update(autograd, batch)
    assert set(grads_m) == set(grads_a) and set(info_m) == set(info_a)
    for name in grads_a:
        scale = grads_a[name].abs().max().item()
        torch.testing.assert_close(grads_m[name], grads_a[name], rtol=1e-4, atol=1e-5 * scale + 1e-12,
                                   msg=lambda m: f"gradient of {name}: {m}")
    for key in info_a:
        torch.testing.assert_close(torch.as_tensor(info_m[key]), torch.as_tensor(info_a[key]), rtol=1e-5,
                                   atol=1e-6, msg=lambda m: f"info[{key!r}]: {m}")
    return manual, info_m, grads_m


def test_the_default_continuous_update_is_the_hand_written_one():
    main, create = read_config_file(CONFIG)
    assert compile_input((main, create), 0).policy.learn.manual_update is None
    assert isinstance(build(None)._update, ManualUpdate)


def test_same_losses_and_gradients(device):
    _, info, grads = assert_same_update(device=device)
    # every parameter trained: the actor and the critics (all layers), and the temperature
    assert {"actor.0.weight", "actor.4.bias", "critic.net.0.weight", "critic.net.4.bias", "log_alpha"} <= set(grads)
    assert all(g.abs().sum() > 0 for g in grads.values())
    assert {"critic_loss", "actor_loss", "alpha_loss", "entropy", "q_mean", "target_q_mean", "grad_norm"} <= set(info)


def test_importance_weights_n_step_discounts_and_terminations():
    batch = random_batch()
    g = torch.Generator().manual_seed(5)
    batch["weight"] = torch.rand(B, generator=g) + 0.2
    batch["discount"] = 0.99 ** torch.randint(1, 4, (B,), generator=g).float()
    _, info, _ = assert_same_update({"policy.priority": True, "policy.priority_IS_weight": True}, batch=batch)
    assert info["priority"].shape == (B,)


@pytest.mark.parametrize("overrides", [
    {"policy.learn.ignore_done": True},
    {"policy.learn.auto_alpha": False, "policy.learn.alpha": 0.05},
    {"policy.model.activation": "tanh", "policy.model.num_critics": 3, "policy.model.actor_head_layer_num": 1,
     "policy.model.critic_head_layer_num": 1, "policy.model.actor_head_hidden_size": 16},
    {"policy.model.num_critics": 1, "policy.model.critic_head_layer_num": 3, "policy.model.actor_head_layer_num": 3},
], ids=["ignore_done", "fixed_alpha", "tanh_3_critics_1_layer", "1_critic_3_layers"])
def test_same_update_in_other_settings(overrides):
    manual, info, grads = assert_same_update(overrides)
    if overrides.get("policy.learn.auto_alpha") is False:
        assert "log_alpha" not in grads and "alpha_loss" not in info


def test_log_std_clamped_on_both_sides():
    """The actor's log-std outside [log_std_min, log_std_max] gets no gradient through the clamp."""
    overrides = {"policy.model.log_std_min": -0.004, "policy.model.log_std_max": 0.004}
    policy, _, _ = assert_same_update(overrides)
    # the test means something only if the raw log-stds fall on both sides of the range and inside it
    raw = policy.model.actor(random_batch()["obs"])[:, ACT:]
    assert (raw < -0.004).any() and (raw > 0.004).any() and ((raw > -0.004) & (raw < 0.004)).any()


def test_dict_observations():
    assert_same_update(obs_space=DICT_SPACE)


def test_fallback_and_refusals():
    # autograd where it does not apply
    assert isinstance(build(None, {"policy.model.activation": "elu"})._update, AutogradUpdate)
    assert isinstance(build(None, action_space="discrete")._update, AutogradUpdate)
    with pytest.raises(ConfigError, match=r"policy.learn.manual_update=True.*ReLU or tanh"):
        build(True, {"policy.model.activation": "elu"})
    with pytest.raises(ConfigError, match=r"policy.learn.manual_update=True.*'discrete'"):
        build(True, action_space="discrete")
    with pytest.raises(ConfigError, match=r"policy.learn.manual_update='yes'"):
        build("yes")


def test_compile_update_needs_the_hand_written_update():
    with pytest.raises(ConfigError, match=r"policy.learn.compile_update=True.*manual_update=False"):
        build(False, {"policy.learn.compile_update": True})
    with pytest.raises(ConfigError, match=r"policy.learn.compile_update=True.*ReLU or tanh"):
        build(None, {"policy.learn.compile_update": True, "policy.model.activation": "elu"})


def assert_same_state(policy, other, where, atol=1e-6):
    """Every parameter (model and target critics) and the optimizer's state of two policies, close."""
    for (name, p), q in zip(policy.model.named_parameters(), other.model.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=atol, msg=lambda m: f"{where}, {name}: {m}")
    for p, q in zip(policy._target_critic.parameters(), other._target_critic.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=atol, msg=lambda m: f"{where}, a target critic: {m}")
    s1, s2 = policy._optimizer.state_dict()["state"], other._optimizer.state_dict()["state"]
    assert s1.keys() == s2.keys()
    # (CUDA's fused Adam rounds 1 - beta2 to float32: its second moments are 1.3e-5 off the folded step's, which
    # takes it in double as the CPU's does; tests/torch_utils/test_optimizer.py)
    rtol = 1e-5 if policy._log_alpha.device.type == "cpu" else 3e-5
    for k in s1:
        for name in s1[k]:
            torch.testing.assert_close(s1[k][name], s2[k][name], rtol=rtol, atol=1e-7,
                                       msg=lambda m: f"{where}, optimizer state {k}.{name}: {m}")


def batch_with_weights(seed):
    batch = random_batch(seed=seed)
    batch["weight"] = torch.rand(B, generator=torch.Generator().manual_seed(seed)) + 0.2
    return batch


ALPHA_PINNED = {"policy.learn.alpha": 0.2, "policy.learn.min_log_alpha": math.log(0.2) - 1e-6,
                "policy.learn.max_log_alpha": math.log(0.2) + 1e-6}  # every step of log alpha is clamped


@pytest.mark.parametrize("overrides", [
    {}, {"policy.learn.auto_alpha": False}, {"policy.learn.target_update_period": 2}, ALPHA_PINNED,
    {"policy.priority": True, "policy.priority_IS_weight": True, "policy.learn.learning_rate_policy": 1e-3},
], ids=["defaults", "fixed_alpha", "polyak_every_2", "alpha_clamped", "weights_and_own_rate"])
def test_the_folded_step_is_the_policys_own(overrides, device):
    """After fold, the compiled update's program also takes Adam's step, the temperature's clamp and the Polyak
    update (update.AfterGradients). That program, run eagerly here, against the policy's own steps: over four
    updates the same parameters, target critics, optimizer state and logged values. Its first update is the policy's
    (the optimizer makes its state there); from the second on the program steps, and leaves no ``.grad``."""
    plain, folded = build(True, overrides, device=device), build(True, overrides, device=device)
    assert folded._update.folded
    folded._update.compiled = True  # the folded program, its functions left eager (the slow tests compile them)
    weighted = "policy.priority" in overrides
    for update in range(4):
        batch = batch_with_weights(update) if weighted else random_batch(seed=update)
        torch.manual_seed(123)
        info_p = plain.learn_mode.forward(copy.deepcopy(batch))
        torch.manual_seed(123)
        info_f = folded.learn_mode.forward(copy.deepcopy(batch))
        assert set(info_p) == set(info_f)
        for key in info_p:
            torch.testing.assert_close(torch.as_tensor(info_f[key]), torch.as_tensor(info_p[key]), rtol=1e-5,
                                       atol=1e-6, msg=lambda m: f"update {update}, info[{key!r}]: {m}")
        assert_same_state(folded, plain, f"update {update}")
        stepped_by_the_program = all(p.grad is None for p in folded.model.parameters())
        assert stepped_by_the_program == (update > 0)
    if overrides is ALPHA_PINNED:  # the clamp held log alpha in its bounds in both
        assert abs(folded._log_alpha.item() - math.log(0.2)) <= 1.01e-6


def test_the_folded_step_reads_a_resumed_optimizer_and_leaves_hooked_steps_to_the_optimizer():
    """The folded program reads the optimizer's state afresh on every update: after a resume (load_state_dict
    replaces the state's tensors) it steps the loaded state. A hook on ``optimizer.step()`` makes the update leave
    the step to the optimizer, so that the hook runs."""
    trained, plain, folded = build(True), build(True), build(True)
    for update in range(2):
        trained.learn_mode.forward(random_batch(seed=update))
    state = trained.learn_mode.state_dict()
    plain.learn_mode.load_state_dict(copy.deepcopy(state))
    folded.learn_mode.load_state_dict(copy.deepcopy(state))
    folded._update.compiled = True  # the folded program, run eagerly
    for update in range(2, 4):
        batch = random_batch(seed=update)
        torch.manual_seed(update)
        plain.learn_mode.forward(copy.deepcopy(batch))
        torch.manual_seed(update)
        folded.learn_mode.forward(copy.deepcopy(batch))
        assert all(p.grad is None for p in folded.model.parameters())
        assert_same_state(folded, plain, f"update {update} after a resume")
    calls = []
    folded._optimizer.register_step_pre_hook(lambda *args: calls.append(1))
    torch.manual_seed(4)
    plain.learn_mode.forward(random_batch(seed=4))
    torch.manual_seed(4)
    folded.learn_mode.forward(random_batch(seed=4))
    assert calls == [1] and folded._log_alpha.grad is not None
    assert_same_state(folded, plain, "a hooked step")


@pytest.mark.parametrize("overrides, obs_space", [({}, None), ({"policy.model.activation": "tanh"}, None),
                                                   ({}, DICT_SPACE)], ids=["relu", "tanh", "dict_obs"])
def test_acting_layer_by_layer_gives_the_module_paths_actions(overrides, obs_space):
    """ContinuousSAC acts through acting.ActingActor (addmm per layer, no module calls): the same actions, and
    the same random draws, as the module path (compute_actor, then the squashed Gaussian)."""
    policy = build(None, overrides, obs_space)
    space = policy._actions
    assert space._acting is not None
    obs = random_batch(obs_space)["obs"]
    with torch.no_grad():  # two of the three log-stds above log_std_max: both paths must clamp them
        policy.model.actor[-1].bias[ACT:ACT + ACT // 2 + 1] += 30.0
    for deterministic in (True, False):
        torch.manual_seed(5)
        layered = space.act(obs, deterministic)
        torch.manual_seed(5)
        modules = space._squashed_action(obs, deterministic)
        assert layered.shape == (B, ACT) and torch.equal(layered, modules)
        # and the generator moved alike:
        torch.manual_seed(5)
        space.act(obs, deterministic)
        after_layered = torch.rand(1)
        torch.manual_seed(5)
        space._squashed_action(obs, deterministic)
        assert torch.equal(after_layered, torch.rand(1))


def test_acting_layer_by_layer_only_for_the_built_in_mlp_actor():
    from ding_lite.policy.sac.acting import ActingActor
    policy = build(None)
    policy.model.actor.append(torch.nn.Identity())
    assert ActingActor.of(policy.model) is None
    assert build(None, {"policy.model.activation": "elu"})._actions._acting is None
    assert ActingActor.of(build(None, action_space="discrete").model) is None


def test_fold_needs_a_plain_fused_adam_over_the_updates_parameters():
    from dataclasses import replace
    policy = build(True)
    manual, params = policy._update, list(policy.model.parameters())
    assert manual.fold(manual.after)
    amsgrad = torch.optim.Adam(params, lr=1e-3, fused=True, amsgrad=True)
    assert not manual.fold(replace(manual.after, optimizer=amsgrad))
    fewer = torch.optim.Adam(params[:-1], lr=1e-3, fused=True)
    assert not manual.fold(replace(manual.after, optimizer=fewer))


@pytest.mark.slow  # torch.compile: 5-15 s
def test_compiled_update_gives_the_eager_update(device):
    """The compiled program of the hand-written update, with the optimizer's step, the temperature's clamp and the
    Polyak update folded in from the second update on: the same losses, parameters, target critics and optimizer
    state as the eager update over three updates (importance weights, n-step discounts and terminations
    included)."""
    per = {"policy.priority": True, "policy.priority_IS_weight": True}
    eager = build(True, per, device=device)
    compiled = build(True, {**per, "policy.learn.compile_update": True}, device=device)
    assert compiled._update.compiled and not eager._update.compiled and compiled._update.folded
    for seed in range(3):
        batch = batch_with_weights(seed)
        batch["discount"] = torch.full((B,), 0.99 ** 2)
        (info_e, grads_e), (info_c, grads_c) = one_update(eager, batch), one_update(compiled, batch)
        if seed == 0:  # the optimizer's first step (it makes its state) is the policy's: gradients to compare
            for name in grads_e:
                torch.testing.assert_close(grads_c[name], grads_e[name], rtol=1e-4, atol=1e-6)
        else:
            assert grads_c == {}  # the program stepped: no .grad left
        for key in info_e:
            torch.testing.assert_close(torch.as_tensor(info_c[key]), torch.as_tensor(info_e[key]), rtol=1e-5,
                                       atol=1e-6)
        assert_same_state(compiled, eager, f"update {seed}", atol=1e-5)


@pytest.mark.slow  # torch.compile: 10-20 s
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (runs where a GPU exists)")
def test_on_a_gpu_the_compiled_update_runs_as_one_cuda_graph_cuda():
    """On a GPU the folded program is recorded as a CUDA graph and replayed. Against the eager update from the same
    parameters and random numbers: the same state after every update; one graph launch per update; the logged
    values of an update still readable after the next replay (the graph's outputs are copied out); and after a
    resume, whose optimizer state comes in new tensors, the graph steps those."""
    graph = build(True, {"policy.learn.compile_update": True}, device="cuda")
    eager = build(True, device="cuda")
    assert graph._update._graphs and not eager._update.compiled

    def both(update):
        batch = random_batch(seed=update)
        torch.manual_seed(update)
        eager.learn_mode.forward(copy.deepcopy(batch))
        torch.manual_seed(update)
        info = graph.learn_mode.forward(copy.deepcopy(batch))
        assert all(p.grad is None for p in graph.model.parameters()) == (update > 0)  # the graph stepped
        assert_same_state(graph, eager, f"update {update}", atol=1e-5)
        return info

    for update in range(3):
        info = both(update)
    held = {k: v.clone() for k, v in info.items() if torch.is_tensor(v)}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        both(3)
        torch.cuda.synchronize()
    assert sum(e.name == "cudaGraphLaunch" for e in prof.events()) == 1
    for key, value in held.items():  # update 2's values, read after update 3's replay
        assert torch.equal(info[key], value), key
    state = copy.deepcopy(eager.learn_mode.state_dict())
    graph.learn_mode.load_state_dict(state)
    for update in range(4, 6):
        both(update)


@pytest.mark.parametrize("mode", [True, None])
def test_a_compile_failure(mode):
    """What a run without a working C++ compiler meets on its first compiled update (torch.compile compiles there):
    with compile_update=True an error naming the key; with None (the default's switch in long runs) a warning, then
    the eager update, for the rest of the run."""
    policy = build(True, {"policy.learn.compile_update": mode})
    policy.learn_mode.forward(random_batch(seed=3))  # the optimizer's first step, eager: the program folds it in after
    policy._update.compiled, policy._update._calls = True, 0  # as compile() leaves it, without compiling; the
    # call below fails the way a failed compilation does

    def fails(*args):
        raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found")
    policy._update._losses_and_grads = policy._update._losses_grads_and_step = fails
    if mode:
        with pytest.raises(RuntimeError, match=r"torch.compile of the SAC update failed \(RuntimeError: "
                                               r"InvalidCxxCompiler.*set policy.learn.compile_update=False"):
            policy.learn_mode.forward(random_batch())
        return
    policy._update.compile_at = 0
    with pytest.warns(RuntimeWarning, match=r"InvalidCxxCompiler.*goes on with the eager update"):
        info = policy.learn_mode.forward(random_batch())
    assert not policy._update.compiled and policy._update.compile_at is None and torch.isfinite(info["critic_loss"])
    policy.learn_mode.forward(random_batch(seed=2))  # and stays eager, without another warning


def test_a_failure_while_the_cuda_graph_records_is_a_compile_failure():
    """With a CUDA graph the program's second call records the graph and its third first replays it: a failure
    there is a failed compilation too (the default warns and goes on eagerly); a failure after that is the run's
    error. (The graph's bookkeeping, its marks and copies, run on the CPU here; the graph itself needs a GPU.)"""
    policy = build(True)
    policy.learn_mode.forward(random_batch(seed=3))  # the optimizer's first step, eager
    manual = policy._update
    manual.compiled, manual._calls, manual._graphs = True, 0, True
    calls = []

    def fails_on_call(n):
        def program(*args):
            calls.append(1)
            if len(calls) == n:
                raise RuntimeError("CUDA error: operation not permitted when stream is capturing")
            return manual._eager_step(*args)
        return program
    manual._losses_grads_and_step = fails_on_call(3)
    manual.compile_at = 0
    policy.learn_mode.forward(random_batch(seed=4))
    policy.learn_mode.forward(random_batch(seed=5))
    with pytest.warns(RuntimeWarning, match=r"stream is capturing.*goes on with the eager update"):
        policy.learn_mode.forward(random_batch(seed=6))
    assert not manual.compiled and not manual._graphs and len(calls) == 3

    manual.compiled, manual._calls, manual._graphs, calls[:] = True, 0, True, []
    manual._losses_grads_and_step = fails_on_call(4)
    for seed in range(3):
        policy.learn_mode.forward(random_batch(seed=seed))
    with pytest.raises(RuntimeError, match="stream is capturing") as raised:
        policy.learn_mode.forward(random_batch(seed=7))
    assert not isinstance(raised.value, CompileFailed)


def test_compile_update_true_compiles_one_program():
    """With compile_update=True the first update, where the optimizer makes its state, runs eagerly: the program
    with the optimizer's step folded in compiles at the second, and no program is compiled for the first alone."""
    policy = build(True, {"policy.learn.compile_update": True})
    compiled_calls = []
    policy._update._losses_and_grads = lambda *args: compiled_calls.append("losses_and_grads")
    policy._update._losses_grads_and_step = lambda *args: compiled_calls.append("folded") or [torch.zeros(())] * 7
    policy.learn_mode.forward(random_batch(seed=0))
    assert compiled_calls == [] and policy._optimizer.state
    policy._update._losses_grads_and_step = policy._update._eager_step  # (its eager form: no compilation here)
    policy.learn_mode.forward(random_batch(seed=1))
    assert all(p.grad is None for p in policy.model.parameters())  # the folded program stepped


def test_when_the_default_compiles(device):
    """compile_update=None: on a CPU or a GPU, from update AUTO_COMPILE_AFTER on."""
    assert build(None, device=device)._update.compile_at == AUTO_COMPILE_AFTER
    assert build(None, {"policy.model.critic_head_hidden_size": 256})._update.compile_at == AUTO_COMPILE_AFTER
    assert not isinstance(build(None, {"policy.learn.compile_update": False})._update, CompiledUpdate)
    compiled = build(None, {"policy.learn.compile_update": True})._update
    assert compiled.compile_at is None and compiled.compiled  # compiled from the start
    assert isinstance(build(False)._update, AutogradUpdate)  # autograd's update: nothing to compile
    with pytest.raises(ConfigError, match=r"policy.learn.compile_update='auto': must be None"):
        build(None, {"policy.learn.compile_update": "auto"})


@pytest.mark.parametrize("setting, kept", [(None, True), (False, False)])
def test_the_compiled_update_keeps_freed_memory(mallopt_calls, setting, kept):
    """On a CPU the compiled update turns on keep_freed_memory (inductor allocates its intermediate results afresh
    on every call) unless the run's top-level key is False. (torch.compile compiles at the first call, not here.)"""
    policy = build(True, {"keep_freed_memory": setting})
    assert mallopt_calls == [] and not policy._update.compiled  # eager: nothing asked
    policy._update.compile()
    assert mallopt_calls == (["mallopt"] if kept else [])


@pytest.mark.slow  # torch.compile: 5-15 s
def test_the_default_switches_to_the_compiled_update_and_resumes_compiled(tmp_path):
    policy = build(None)
    policy._update.compile_at = 2
    for seed in range(3):
        assert not policy._update.compiled  # compiles at the start of update 2 (the third)
        policy.learn_mode.forward(random_batch(seed=seed))
    assert policy._update.compiled
    state = policy.learn_mode.state_dict()
    resumed = build(None)
    resumed._update.compile_at = 2
    resumed.learn_mode.load_state_dict(state)  # learn_steps 3: past the switch
    resumed.learn_mode.forward(random_batch(seed=3))
    assert resumed._update.compiled


@pytest.mark.parametrize("manual, compiled, engine", [
    (False, None, AutogradUpdate), (None, False, ManualUpdate), (True, False, ManualUpdate),
    (None, None, CompiledUpdate), (True, True, CompiledUpdate)])
def test_the_update_engine_is_the_one_the_keys_name(manual, compiled, engine):
    """learn.manual_update and learn.compile_update choose the engine once, at the learner's start."""
    chosen = build(manual, {"policy.learn.compile_update": compiled})._update
    assert type(chosen) is engine
    if engine is CompiledUpdate:  # None: from update AUTO_COMPILE_AFTER on; True: from the first
        assert chosen.compile_at == (AUTO_COMPILE_AFTER if compiled is None else None)


def test_acting_imports_no_update_engine():
    """A process that only acts (collectors, evaluators, a deployed policy) loads none of the update engines."""
    import subprocess
    import sys
    code = ("import sys, ding_lite.policy.sac; "
            "print(sorted(m for m in sys.modules if m.endswith(('_update', '.update'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "manual_update" not in out and "compiled_update" not in out and "autograd_update" not in out, out

"""Every policy's learn, collect and eval paths are device-clean and read the device back once per update, proved
without a GPU: the policy's device is replaced by torch's 'meta' device (``Policy._select_device``), a stand-in for
CUDA with the same rules (a tensor made on the CPU and mixed into a 'meta' computation is an error, as it is on a
GPU) and no data, so that every read of a value on the host (``.item()``, ``bool(t)``, a boolean-mask index, whose
shape needs the mask's values) fails, except the one sanctioned transfer (``Tensor.tolist``), which is counted here
and returns zeros. Batches come from the CPU, as the replay buffer gives them. (Issue 25, items 1 and 6.)"""
import copy
from typing import Any, Dict, List

import pytest
import torch
from easydict import EasyDict

from ding_lite.config import compile_config
from ding_lite.data import ReplayBuffer
from ding_lite.policy import ACERPolicy, IMPALAPolicy
from ding_lite.policy.base_policy import Policy
from ding_lite.utils import POLICY_REGISTRY
from ding_lite.worker import Learner


STANDIN = torch.device("meta")
T, N, OBS_DIM = 6, 4, 4
SHAPES = {"discrete": 3, "continuous": 2, "multi_discrete": [3, 2]}
UNROLL_CASES = [  # (policy, action space, obs storage, learn overrides)
    ("impala", "discrete", "full", {}),
    ("impala", "discrete", "compact", {}),
    ("impala", "continuous", "full", {}),
    ("impala", "multi_discrete", "compact", {}),
    ("acer", "discrete", "full", {"trust_region": True}),
    ("acer", "discrete", "compact", {"trust_region": False}),  # issue 25: the CPU zero of trust_region=False
    ("acer", "continuous", "full", {"trust_region": True}),
    ("acer", "continuous", "compact", {"trust_region": False}),
]
SAC_CASES = ["continuous", "discrete", "boltzmann", "mixed"]


@pytest.fixture
def transfers(monkeypatch) -> List[torch.Size]:
    """The device -> host transfers (``tolist`` of a stand-in tensor) made from now on; every other read of a
    stand-in tensor's value raises."""
    seen: List[torch.Size] = []
    tolist = torch.Tensor.tolist

    def counted_tolist(self):
        if self.device == STANDIN:
            seen.append(self.shape)
            return tolist(torch.zeros(self.shape))
        return tolist(self)

    monkeypatch.setattr(torch.Tensor, "tolist", counted_tolist)
    return seen


def on_standin(monkeypatch) -> None:
    """Policies built from now on put their model and tensors on the stand-in device."""
    monkeypatch.setattr(Policy, "_select_device", lambda self: STANDIN)


def unroll_policy(name: str, space: str, storage: str, learn: Dict[str, Any]) -> Policy:
    main = dict(env=dict(env_id="CartPole-v1"),
                policy=dict(obs_storage=storage, learn=learn, eval=dict(epsilon=0.1 if space != "continuous" else 0),
                            model=dict(encoder_hidden_size_list=[16], actor_head_hidden_size=16,
                                       critic_head_hidden_size=16)))
    cfg = compile_config((main, dict(policy=dict(type=name))))
    cfg.policy.action_space = space
    cfg.policy.model.update(obs_shape=OBS_DIM, action_shape=SHAPES[space], action_space=space)
    torch.manual_seed(0)
    return {"impala": IMPALAPolicy, "acer": ACERPolicy}[name](cfg.policy)


def unroll_batch(policy: Policy, space: str, **extra: torch.Tensor) -> Dict[str, Any]:
    """Train samples (N, T, ...) on the CPU, made by the policy's own hook from a segment with a termination, a
    truncation inside the unroll and one at its end, and the fields ``extra`` (T, N, ...) a policy's collect adds."""
    g = torch.Generator().manual_seed(0)
    obs = torch.randn(T + 1, N, OBS_DIM, generator=g)
    terminated = torch.zeros(T, N, dtype=torch.bool)
    truncated = torch.zeros(T, N, dtype=torch.bool)
    terminated[2, 1] = truncated[1, 2] = truncated[T - 1, 2] = truncated[3, 3] = True
    next_obs = obs[1:].clone()
    next_obs[1, 2], next_obs[3, 3] = torch.randn(OBS_DIM, generator=g), torch.randn(OBS_DIM, generator=g)
    if space == "discrete":
        action, logit = torch.randint(3, (T, N), generator=g), torch.randn(T, N, 3, generator=g)
    elif space == "multi_discrete":
        action = torch.stack([torch.randint(3, (T, N), generator=g), torch.randint(2, (T, N), generator=g)], -1)
        logit = torch.randn(T, N, 5, generator=g)
    else:
        action = torch.randn(T, N, 2, generator=g)
        logit = {"mu": torch.randn(T, N, 2, generator=g), "sigma": torch.rand(T, N, 2, generator=g) + 0.5}
    segment = {"obs": obs[:T], "next_obs": next_obs, "action": action, "logit": logit,
               "reward": torch.randn(T, N, generator=g), "terminated": terminated, "truncated": truncated, **extra}
    buffer = ReplayBuffer(dict(replay_buffer_size=16), seed=0)
    buffer.push(policy.collect_mode.get_train_sample(segment), cur_collector_envstep=0)
    return buffer.sample(N, 0)


def leaves(tree: Any) -> List[torch.Tensor]:
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in leaves(v)]
    return [tree] if isinstance(tree, torch.Tensor) else []


def check_policy(policy: Policy, batch: Dict[str, Any], obs: torch.Tensor, transfers: List[torch.Size],
                 **collect_kwargs: Any) -> None:
    """Two learner updates read the device once each; collect and eval answer on the stand-in device."""
    assert next(policy.model.parameters()).device == STANDIN
    learner = Learner(policy.learn_mode)
    for update in (1, 2):
        info = learner.train(copy.deepcopy(batch))
        assert len(transfers) == update, f"{len(transfers)} device -> host transfers in {update} updates"
        on_host = [k for k, v in info.items() if isinstance(v, torch.Tensor) and v.device != STANDIN]
        assert not on_host, f"made off the policy's device: {on_host}"
    for out in (policy.collect_mode.forward(obs), policy.collect_mode.forward(obs, **collect_kwargs),
                policy.eval_mode.forward(obs)):
        assert leaves(out["action"]) and all(x.device == STANDIN for x in leaves(out))


@pytest.mark.parametrize("name, space, storage, learn", UNROLL_CASES)
def test_unroll_policies_are_device_clean_with_one_transfer_per_update(name, space, storage, learn, monkeypatch,
                                                                        transfers):
    on_standin(monkeypatch)
    policy = unroll_policy(name, space, storage, learn)
    batch = unroll_batch(policy, space)
    assert batch["obs"].device.type == "cpu"
    check_policy(policy, batch, torch.randn(5, OBS_DIM), transfers)


@pytest.mark.parametrize("case", SAC_CASES)
def test_sac_is_device_clean_with_one_transfer_per_update(case, make, monkeypatch, transfers):
    sac = make(case)
    batch = sac.batch()
    obs = batch["obs"][:5].clone()
    on_standin(monkeypatch)
    cfg: EasyDict = sac.cfg.policy
    torch.manual_seed(0)
    policy = POLICY_REGISTRY.get(cfg.type)(cfg)
    check_policy(policy, batch, obs, transfers, random_action=True)


def test_the_standin_catches_a_cpu_tensor_and_a_host_read(monkeypatch, transfers):
    """The stand-in is as strict as a GPU where it matters here (what the tests above rely on)."""
    x = torch.ones(3, device=STANDIN)
    with pytest.raises(RuntimeError):
        torch.stack([x.sum(), torch.zeros(())])
    for read in (lambda: x.sum().item(), lambda: bool(x.sum() > 0), lambda: x[x > 0], lambda: x.nonzero()):
        with pytest.raises((RuntimeError, NotImplementedError)):
            read()
    assert transfers == []


def gpu_check_module():
    """benchmarks/gpu_check.py, imported from its file (the benchmarks are scripts, not a package)."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "gpu_check.py")
    spec = importlib.util.spec_from_file_location("gpu_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_check_without_a_gpu_says_so_and_exits_0(monkeypatch, tmp_path, capsys):
    gpu_check = gpu_check_module()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(gpu_check, "RESULTS", str(tmp_path))
    assert gpu_check.main([]) == 0
    assert "no CUDA device" in capsys.readouterr().out and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["cartpole_acer", "pendulum_sac_per"])
def test_gpu_check_runs_its_checks_on_the_cpu(name, monkeypatch, tmp_path):
    """The same script with --device cpu: learn step, eval path and a short serial run of ACER (the policy of the
    issue) and of SAC with prioritised replay (its priorities updated after each timed update), results written."""
    import json
    gpu_check = gpu_check_module()
    monkeypatch.setattr(gpu_check, "RESULTS", str(tmp_path))
    assert gpu_check.main(["--device", "cpu", "--configs", name, "--seconds", "0.2", "--env-steps", "300"]) == 0
    (row,) = json.loads((tmp_path / "gpu_check_cpu.json").read_text())["rows"]
    assert row["learn"]["updates_per_s"] > 0 and row["serial"]["train_iter"] > 0
    assert (row["learn"]["compiled_sum_tree"] is None) == (name == "cartpole_acer")  # only SAC's buffer has priorities



@pytest.mark.parametrize("space, value_norm", [("discrete", True), ("continuous", False)])
def test_recurrent_ppo_is_device_clean_with_one_transfer_per_update(space, value_norm, monkeypatch, transfers):
    """PPO's LSTM core: the learner's shuffled minibatches of whole unrolls replayed from their stored states, and
    the recurrent collect (with V(x_t)) and eval steps. The train samples come from the CPU policy's own hook."""
    def ppo() -> Policy:
        main = dict(env=dict(env_id="CartPole-v1"),
                    policy=dict(unroll_len=T, learn=dict(batch_size=N, minibatch_size=2 * T, epochs=2,
                                                         value_norm=value_norm),
                                collect=dict(n_sample=N), other=dict(replay_buffer=dict(replay_buffer_size=N)),
                                model=dict(encoder_hidden_size_list=[16], actor_head_hidden_size=16,
                                           critic_head_hidden_size=16, core="lstm", core_size=8)))
        cfg = compile_config((main, dict(policy=dict(type="ppo"))))
        cfg.policy.action_space = space
        cfg.policy.model.update(obs_shape=OBS_DIM, action_shape=SHAPES[space], action_space=space)
        cfg.policy.learn.grad_clip_type = None  # clip_grad_norm_'s foreach kernels do not exist for the stand-in
        torch.manual_seed(0)
        return POLICY_REGISTRY.get("ppo")(cfg.policy)

    g = torch.Generator().manual_seed(1)
    batch = unroll_batch(ppo(), space, value=torch.randn(T, N, generator=g),
                         core_state=torch.randn(T, N, 2, 8, generator=g))
    assert batch["core_state"].shape == (N, 1, 2, 8) and batch["done"].shape == (N, T)
    on_standin(monkeypatch)
    check_policy(ppo(), batch, torch.randn(5, OBS_DIM), transfers)

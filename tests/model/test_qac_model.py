"""QAC's public methods the SAC policy relies on: compute_critic on the model's own critics or on a target copy,
make_target_critic, and the actor / critic parameter split; and how its layers start (``init``)."""
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.model.qac import QAC
from ding_lite.torch_utils.network import EnsembleLinear, EnsembleMLP, mlp
from ding_lite.utils import ConfigError

OBS_SHAPE = (2, 3)  # a 2-d observation: the critic sees it flattened
SPACES = {"continuous": 2, "discrete": 4, "mixed": [3, 2]}


def make(space, **kw):
    torch.manual_seed(0)
    return QAC(OBS_SHAPE, SPACES[space], space, critic_head_hidden_size=16, actor_head_hidden_size=16,
               num_critics=3, **kw)


def inputs(space, B=5):
    g = torch.Generator().manual_seed(1)
    obs = torch.randn(B, *OBS_SHAPE, generator=g)
    action = None if space == "discrete" else torch.rand(B, 2, generator=g) * 2 - 1
    return obs, action


def by_hand(critic, space, obs, action):
    """What the critic ensemble sees: the flattened observation, with the continuous action appended."""
    x = obs.reshape(obs.shape[0], -1)
    if action is not None:
        x = torch.cat([x, action], dim=-1)
    q = critic(x)
    return q[..., 0] if space == "continuous" else q


@pytest.mark.parametrize("space", list(SPACES))
def test_compute_critic_shapes_and_input(space):
    model = make(space)
    obs, action = inputs(space)
    q = model.compute_critic(obs, action)
    assert q.shape == {"continuous": (3, 5), "discrete": (3, 5, 4), "mixed": (3, 5, 3)}[space]
    assert torch.equal(q, by_hand(model.critic, space, obs, action))
    assert torch.equal(model(obs, mode="compute_critic", action=action), q)
    if action is not None:  # the action is an input of the critic: another action, another Q
        assert not torch.equal(model.compute_critic(obs, -action), q)


@pytest.mark.parametrize("space", list(SPACES))
def test_target_critic_is_a_frozen_copy_evaluated_the_same_way(space):
    model = make(space)
    obs, action = inputs(space)
    target = model.make_target_critic()
    assert all(not p.requires_grad for p in target.parameters())
    model_ids = {id(p) for p in model.parameters()}
    assert not model_ids & {id(p) for p in target.parameters()}
    assert set(model.state_dict()) == set(make(space).state_dict())  # the copy is not part of the model's state
    assert torch.equal(model.compute_critic(obs, action, critic=target), model.compute_critic(obs, action))
    # Its parameters pair with critic_parameters() one to one, in order (what Polyak averaging zips).
    assert [p.shape for p in target.parameters()] == [p.shape for p in model.critic_parameters()]
    with torch.no_grad():
        for p in target.parameters():
            p.add_(0.1)
    moved = model.compute_critic(obs, action, critic=target)
    assert torch.equal(moved, by_hand(target, space, obs, action))
    assert not torch.equal(moved, model.compute_critic(obs, action))  # the online critics did not move


@pytest.mark.parametrize("space,actor", [("continuous", True), ("discrete", True), ("discrete", False),
                                         ("mixed", True)])
def test_actor_and_critic_parameters_split_the_model(space, actor):
    model = make(space, actor=actor)
    model.register_parameter("log_alpha", torch.nn.Parameter(torch.zeros(1)))  # what SAC attaches
    actor_ids = [id(p) for p in model.actor_parameters()]
    critic_ids = [id(p) for p in model.critic_parameters()]
    assert critic_ids == [id(p) for p in model.critic.parameters()]
    assert bool(actor_ids) == actor and not set(actor_ids) & set(critic_ids)
    assert set(actor_ids) | set(critic_ids) | {id(model.log_alpha)} == {id(p) for p in model.parameters()}
    if actor:  # the actor's parameters move its output, not the critics'
        obs, action = inputs(space)
        q, out = model.compute_critic(obs, action), model.compute_actor(obs)
        with torch.no_grad():
            for p in model.actor_parameters():
                p.add_(0.5)
        assert torch.equal(model.compute_critic(obs, action), q)
        assert any(not torch.equal(out[k], model.compute_actor(obs)[k]) for k in out)


@pytest.mark.parametrize("space", ["continuous", "mixed"])
def test_detach_weights_sends_the_gradient_to_the_action_only(space):
    """SAC's actor loss goes through the critics with detach_weights=True: the same Q, the same gradient on the
    action as through the live critics, and no gradient on any critic parameter."""
    model = make(space)
    obs, action = inputs(space)
    live_action = action.clone().requires_grad_(True)
    model.compute_critic(obs, live_action).sum().backward()
    expected_grad = live_action.grad.clone()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.critic_parameters())
    model.zero_grad(set_to_none=True)
    frozen_action = action.clone().requires_grad_(True)
    q = model.compute_critic(obs, frozen_action, detach_weights=True)
    assert torch.equal(q, model.compute_critic(obs, action))
    q.sum().backward()
    torch.testing.assert_close(frozen_action.grad, expected_grad, rtol=0, atol=0)
    assert all(p.grad is None for p in model.critic_parameters())


def linear_layers(module):
    """(weight (out, in), bias (out,)) of every linear layer of an mlp, or of an EnsembleMLP's members one after the
    other (each member's layers in order)."""
    if isinstance(module, EnsembleMLP):
        layers = [layer for layer in module.net if isinstance(layer, EnsembleLinear)]
        return [(layer.weight[i].T, layer.bias[i, 0]) for i in range(module.n) for layer in layers]
    return [(layer.weight, layer.bias) for layer in module if isinstance(layer, torch.nn.Linear)]


@pytest.mark.parametrize("space", list(SPACES))
def test_init_orthogonal_and_torch(space):
    """``init='orthogonal'`` (the default): orthogonal weights (gain sqrt(2) in hidden layers, 0.01 in the actor's
    output, 1 in the critics'), zero biases. ``init='torch'``: nn.Linear's own init, weights and biases inside
    +-1/sqrt(fan_in) and spread over it (uniform: std bound/sqrt(3)), as Tianshou's, SB3's and CleanRL's SAC."""
    for name, module in [("actor", make(space).actor), ("critic", make(space).critic)]:
        layers = linear_layers(module) if module is not None else []
        for k, (w, b) in enumerate(layers):
            last = name == "actor" and k == len(layers) - 1 or name == "critic" and (k + 1) % 3 == 0
            gain = 0.01 if last and name == "actor" else 1.0 if last else 2 ** 0.5
            small = min(w.shape)  # orthogonal: the rows (or columns, whichever are fewer) are orthonormal x gain
            gram = w @ w.T if w.shape[0] == small else w.T @ w
            torch.testing.assert_close(gram, gain ** 2 * torch.eye(small), atol=1e-5, rtol=1e-4)
            assert torch.count_nonzero(b) == 0
    big = QAC(64, 2, "continuous", actor_head_hidden_size=256, critic_head_hidden_size=256, init="torch")
    for w, b in linear_layers(big.actor) + linear_layers(big.critic):
        bound = 1 / w.shape[1] ** 0.5
        assert w.abs().max() <= bound and b.abs().max() <= bound
        if w.numel() >= 16_000:  # the 256-wide layers: the spread of a uniform(-bound, bound)
            assert abs(w.std().item() / (bound / 3 ** 0.5) - 1) < 0.03


def test_init_torch_is_nn_linear_s_own_init():
    """With the same seed, the 'torch' actor is built exactly as a stack of nn.Linear layers would be."""
    torch.manual_seed(3)
    actor = mlp(5, [8, 8], 4, "relu", 0.01, init="torch")
    torch.manual_seed(3)
    reference = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8), torch.nn.ReLU(),
                                    torch.nn.Linear(8, 4))
    assert [torch.equal(a, r) for a, r in zip(actor.state_dict().values(), reference.state_dict().values())] == [True] * 6
    torch.manual_seed(3)
    members = EnsembleLinear(2, 5, 8, init="torch")
    torch.manual_seed(3)
    first, second = torch.nn.Linear(5, 8), torch.nn.Linear(5, 8)
    assert torch.equal(members.weight[0], first.weight.T) and torch.equal(members.bias[1, 0], second.bias)


def test_misspelt_init_names_the_key():
    main = dict(env=dict(env_id="Pendulum-v1"), policy=dict(model=dict(init="orthogonl")))
    with pytest.raises(ConfigError) as err:
        compile_config((main, dict(policy=dict(type="sac"))))
    assert "policy.model.init='orthogonl': unknown; did you mean orthogonal?" in str(err.value)
    assert compile_config((dict(main, policy=dict(model=dict(init="torch"))), dict(policy=dict(type="sac")))) \
        .policy.model.init == "torch"

"""QAC's public methods the SAC policy relies on: compute_critic on the model's own critics or on a target copy,
make_target_critic, and the actor / critic parameter split."""
import pytest
import torch

from ding_lite.model.qac import QAC

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

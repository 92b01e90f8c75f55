"""The ACER model's public methods the ACER policy relies on: compute_actor (also on an average copy),
make_average_actor and actor_parameters with and without the shared encoder."""
import pytest
import torch

from ding_lite.model.acer import ACER

OBS_SHAPE = (2, 3)


def make(space, share_encoder):
    torch.manual_seed(0)
    return ACER(OBS_SHAPE, 3, space, share_encoder=share_encoder, encoder_hidden_size_list=[8],
                actor_head_hidden_size=8, critic_head_hidden_size=8, sigma_type="conditioned")


def obs(B=4):
    return torch.randn(B, *OBS_SHAPE, generator=torch.Generator().manual_seed(1))


def stats(logit):
    return [logit] if isinstance(logit, torch.Tensor) else [logit["mu"], logit["sigma"]]


@pytest.mark.parametrize("space", ["discrete", "continuous"])
@pytest.mark.parametrize("share_encoder", [False, True])
def test_average_actor_is_a_frozen_copy_of_the_whole_actor(space, share_encoder):
    model = make(space, share_encoder)
    x = obs()
    avg = model.make_average_actor()
    assert all(not p.requires_grad for p in avg.parameters())
    assert not {id(p) for p in avg.parameters()} & {id(p) for p in model.parameters()}
    assert set(model.state_dict()) == set(make(space, share_encoder).state_dict())
    full = model.actor_parameters(include_shared_encoder=True)
    assert [p.shape for p in avg.parameters()] == [p.shape for p in full]  # pairs for Polyak averaging
    assert all(torch.equal(a, p) for a, p in zip(avg.parameters(), full))
    # evaluated like the model's own actor, on the flattened observation
    own = model.compute_actor(x)["logit"]
    assert all(torch.equal(a, b) for a, b in zip(stats(model.compute_actor(x, actor=avg)["logit"]), stats(own)))
    assert all(torch.equal(a, b) for a, b in zip(stats(model.actor(x.flatten(1))), stats(own)))
    assert all(torch.equal(a, b) for a, b in zip(stats(model(x, mode="compute_actor")["logit"]), stats(own)))
    with torch.no_grad():
        for p in avg.parameters():
            p.mul_(0.5)
    moved = stats(model.compute_actor(x, actor=avg)["logit"])
    assert all(not torch.equal(a, b) for a, b in zip(moved, stats(own)))
    assert all(torch.equal(a, b) for a, b in zip(stats(model.compute_actor(x)["logit"]), stats(own)))


@pytest.mark.parametrize("share_encoder", [False, True])
def test_actor_parameters_with_and_without_the_shared_encoder(share_encoder):
    model = make("discrete", share_encoder)
    encoder = {id(p) for p in model.actor.encoder.parameters()}
    own = {id(p) for p in model.actor_parameters()}
    full = [id(p) for p in model.actor_parameters(include_shared_encoder=True)]
    assert full == [id(p) for p in model.actor.parameters()]
    assert encoder <= set(full)
    assert (encoder <= own) != share_encoder  # a shared encoder belongs to the critic
    assert set(full) - own == (encoder if share_encoder else set())

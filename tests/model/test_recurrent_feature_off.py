"""``policy.model.core=None`` (the default) changes nothing: the models' modules, parameters, state_dict keys and
outputs, and a short IMPALA and ACER training run, are those of ding_lite before the recurrent core existed.

The pinned values below were computed by this file's ``digests()`` on the code before the core was added
(``git archive`` of the commit before it, run with ``python tests/model/test_recurrent_feature_off.py``), and the
test recomputes them on the current code: structure exactly, numbers to 1e-4 relative (so that another CPU's
rounding passes; on the machine that pinned them, sha256 hashes of every tensor's bytes were identical too). Run
this file as a script to print them.
"""
import os
import sys
import tempfile

import pytest
import torch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


def _digest(tensors) -> list:
    """Structure exactly (names, shapes, dtypes) and numbers to 6 significant digits (sum, sum of |x|, sum of x^2
    over all the tensors): any change of architecture, initialisation or random draws moves them far more, and
    another CPU's rounding (BLAS, LAPACK's QR in the orthogonal init) does not."""
    names, total, absolute, square = [], 0.0, 0.0, 0.0
    for name, t in tensors:
        t = t.detach().double()
        names.append(f"{name}:{tuple(t.shape)}")
        total += float(t.sum())
        absolute += float(t.abs().sum())
        square += float((t * t).sum())
    return ["|".join(names)] + [float(f"{v:.6g}") for v in (total, absolute, square)]


def _tree_items(prefix, x):
    if isinstance(x, dict):
        for k in sorted(x):
            yield from _tree_items(f"{prefix}.{k}", x[k])
    else:
        yield prefix, x


def model_digests() -> dict:
    from ding_lite.model.acer import ACER
    from ding_lite.model.vac import VAC

    image = dict(space="box", shape=[4, 84, 84], dtype="uint8")
    cases = {  # name: (model, observations)
        "vac_discrete": (lambda: VAC(4, 2), (3, 4)),
        "vac_separate_continuous": (lambda: VAC(3, 1, "continuous", share_encoder=False), (3, 3)),
        "vac_multi_discrete": (lambda: VAC(5, [3, 2], "multi_discrete", sigma_type="conditioned"), (3, 5)),
        "vac_conv": (lambda: VAC([4, 84, 84], 6, obs_space=image, conv_channels=[8, 8, 8], conv_hidden_size=32),
                     None),
        "acer_discrete": (lambda: ACER(4, 2, "discrete"), (3, 4)),
        "acer_shared_continuous": (lambda: ACER(3, 2, "continuous", share_encoder=True), (3, 3)),
        "acer_conv": (lambda: ACER([4, 84, 84], 6, "discrete", obs_space=image, conv_channels=[8, 8, 8],
                                   conv_hidden_size=32), None),
    }
    out = {}
    for name, (make, obs_shape) in cases.items():
        torch.manual_seed(0)
        model = make()
        obs = (torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8) if obs_shape is None
               else torch.randn(*obs_shape))
        if isinstance(model, ACER):
            outputs = model(obs, mode="compute_actor_critic",
                            action=torch.zeros(3, 2) if model.action_space == "continuous" else None)
        else:
            outputs = model(obs)
        out[name] = [",".join(name for name, _ in model.named_modules()), _digest(model.state_dict().items()),
                     _digest(_tree_items("out", outputs))]
    return out


def run_digests() -> dict:
    """Short serial IMPALA and ACER runs on CartPole (2 envs, a few hundred steps): the trained weights' digest."""
    sys.path.insert(0, os.path.join(REPO, "dizoo_configs"))
    import cartpole_acer
    import cartpole_impala

    from ding_lite.entry import serial_pipeline

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, module in (("impala", cartpole_impala), ("acer", cartpole_acer)):
            # IMPALA with the config's values of when the digests were pinned (before kl_weight existed): the
            # question is whether the code changed the run, not the config.
            pinned = {"policy.learn.learning_rate": 0.0002, "policy.learn.kl_weight": 0.0} if name == "impala" else {}
            policy = serial_pipeline((module.main_config, module.create_config), seed=3, max_env_step=400,
                                     overrides={"env.collector_env_num": 2, "env.evaluator_env_num": 1,
                                                "env.n_evaluator_episode": 1, "policy.collect.n_sample": 4,
                                                "policy.learn.batch_size": 4, "policy.unroll_len": 8, **pinned},
                                     exp_name=os.path.join(tmp, name), quiet=True)
            out[f"run_{name}"] = _digest(policy.model.state_dict().items())
    return out


def digests() -> dict:
    return {**model_digests(), **run_digests()}


PINNED = {  # computed on the code before the recurrent core (see the module docstring)
    'vac_discrete': [',actor_encoder,actor_encoder.0,actor_encoder.1,actor_encoder.2,actor_encoder.3,actor_head,actor_head.0,actor_head.1,actor_head.2,critic_head,critic_head.0,critic_head.1,critic_head.2', ['actor_encoder.0.weight:(128, 4)|actor_encoder.0.bias:(128,)|actor_encoder.2.weight:(128, 128)|actor_encoder.2.bias:(128,)|critic_encoder.0.weight:(128, 4)|critic_encoder.0.bias:(128,)|critic_encoder.2.weight:(128, 128)|critic_encoder.2.bias:(128,)|actor_head.0.weight:(64, 128)|actor_head.0.bias:(64,)|actor_head.2.weight:(2, 64)|actor_head.2.bias:(2,)|critic_head.0.weight:(64, 128)|critic_head.0.bias:(64,)|critic_head.2.weight:(1, 64)|critic_head.2.bias:(1,)', -22.706, 5015.05, 785.0], ['out.logit:(3, 2)|out.value:(3,)', 0.135049, 0.260409, 0.0411908]],
    'vac_separate_continuous': [',actor_encoder,actor_encoder.0,actor_encoder.1,actor_encoder.2,actor_encoder.3,critic_encoder,critic_encoder.0,critic_encoder.1,critic_encoder.2,critic_encoder.3,actor_head,actor_head.0,actor_head.1,actor_head.2,critic_head,critic_head.0,critic_head.1,critic_head.2', ['log_sigma:(1,)|actor_encoder.0.weight:(128, 3)|actor_encoder.0.bias:(128,)|actor_encoder.2.weight:(128, 128)|actor_encoder.2.bias:(128,)|critic_encoder.0.weight:(128, 3)|critic_encoder.0.bias:(128,)|critic_encoder.2.weight:(128, 128)|critic_encoder.2.bias:(128,)|actor_head.0.weight:(64, 128)|actor_head.0.bias:(64,)|actor_head.2.weight:(1, 64)|actor_head.2.bias:(1,)|critic_head.0.weight:(64, 128)|critic_head.0.bias:(64,)|critic_head.2.weight:(1, 64)|critic_head.2.bias:(1,)', 1.28623, 4992.27, 781.0], ['out.logit.mu:(3, 1)|out.logit.sigma:(3, 1)|out.value:(3,)', 2.64965, 3.35035, 3.04667]],
    'vac_multi_discrete': [',actor_encoder,actor_encoder.0,actor_encoder.1,actor_encoder.2,actor_encoder.3,actor_head,actor_head.0,actor_head.1,actor_head.2,critic_head,critic_head.0,critic_head.1,critic_head.2', ['actor_encoder.0.weight:(128, 5)|actor_encoder.0.bias:(128,)|actor_encoder.2.weight:(128, 128)|actor_encoder.2.bias:(128,)|critic_encoder.0.weight:(128, 5)|critic_encoder.0.bias:(128,)|critic_encoder.2.weight:(128, 128)|critic_encoder.2.bias:(128,)|actor_head.0.weight:(64, 128)|actor_head.0.bias:(64,)|actor_head.2.weight:(5, 64)|actor_head.2.bias:(5,)|critic_head.0.weight:(64, 128)|critic_head.0.bias:(64,)|critic_head.2.weight:(1, 64)|critic_head.2.bias:(1,)', -20.5188, 5043.5, 789.0], ['out.logit:(3, 5)|out.value:(3,)', -0.214953, 0.554401, 0.106009]],
    'vac_conv': [',actor_encoder,actor_encoder.torso,actor_encoder.torso.0,actor_encoder.torso.1,actor_encoder.torso.2,actor_encoder.torso.3,actor_encoder.torso.4,actor_encoder.torso.5,actor_encoder.fc,actor_encoder.fc.0,actor_encoder.fc.1,actor_encoder.fc.2,actor_head,actor_head.0,actor_head.1,actor_head.2,critic_head,critic_head.0,critic_head.1,critic_head.2', ['actor_encoder.torso.0.weight:(8, 4, 8, 8)|actor_encoder.torso.0.bias:(8,)|actor_encoder.torso.2.weight:(8, 8, 4, 4)|actor_encoder.torso.2.bias:(8,)|actor_encoder.torso.4.weight:(8, 8, 3, 3)|actor_encoder.torso.4.bias:(8,)|actor_encoder.fc.1.weight:(32, 392)|actor_encoder.fc.1.bias:(32,)|critic_encoder.torso.0.weight:(8, 4, 8, 8)|critic_encoder.torso.0.bias:(8,)|critic_encoder.torso.2.weight:(8, 8, 4, 4)|critic_encoder.torso.2.bias:(8,)|critic_encoder.torso.4.weight:(8, 8, 3, 3)|critic_encoder.torso.4.bias:(8,)|critic_encoder.fc.1.weight:(32, 392)|critic_encoder.fc.1.bias:(32,)|actor_head.0.weight:(64, 32)|actor_head.0.bias:(64,)|actor_head.2.weight:(6, 64)|actor_head.2.bias:(6,)|critic_head.0.weight:(64, 32)|critic_head.0.bias:(64,)|critic_head.2.weight:(1, 64)|critic_head.2.bias:(1,)', -47.2498, 2667.69, 353.001], ['out.logit:(3, 6)|out.value:(3,)', 0.00739943, 0.183488, 0.0118533]],
    'acer_discrete': [',actor,actor.encoder,actor.encoder.0,actor.encoder.1,actor.encoder.2,actor.encoder.3,actor.head,actor.head.0,actor.head.1,actor.head.2,critic,critic.encoder,critic.encoder.0,critic.encoder.1,critic.encoder.2,critic.encoder.3,critic.q_head,critic.q_head.0,critic.q_head.1,critic.q_head.2', ['actor.encoder.0.weight:(128, 4)|actor.encoder.0.bias:(128,)|actor.encoder.2.weight:(128, 128)|actor.encoder.2.bias:(128,)|actor.head.0.weight:(64, 128)|actor.head.0.bias:(64,)|actor.head.2.weight:(2, 64)|actor.head.2.bias:(2,)|critic.encoder.0.weight:(128, 4)|critic.encoder.0.bias:(128,)|critic.encoder.2.weight:(128, 128)|critic.encoder.2.bias:(128,)|critic.q_head.0.weight:(64, 128)|critic.q_head.0.bias:(64,)|critic.q_head.2.weight:(2, 64)|critic.q_head.2.bias:(2,)', 2.85881, 5028.38, 786.0], ['out.logit:(3, 2)|out.q_value:(3, 2)', 0.0440561, 0.325632, 0.0385411]],
    'acer_shared_continuous': [',actor,actor.encoder,actor.encoder.0,actor.encoder.1,actor.encoder.2,actor.encoder.3,actor.head,actor.head.0,actor.head.1,actor.head.2,actor.sigma_head,actor.sigma_head.0,actor.sigma_head.1,actor.sigma_head.2,critic,critic.value_head,critic.value_head.0,critic.value_head.1,critic.value_head.2,critic.adv_head,critic.adv_head.0,critic.adv_head.1,critic.adv_head.2', ['actor.encoder.0.weight:(128, 3)|actor.encoder.0.bias:(128,)|actor.encoder.2.weight:(128, 128)|actor.encoder.2.bias:(128,)|actor.head.0.weight:(64, 128)|actor.head.0.bias:(64,)|actor.head.2.weight:(2, 64)|actor.head.2.bias:(2,)|actor.sigma_head.0.weight:(64, 128)|actor.sigma_head.0.bias:(64,)|actor.sigma_head.2.weight:(2, 64)|actor.sigma_head.2.bias:(2,)|critic.encoder.0.weight:(128, 3)|critic.encoder.0.bias:(128,)|critic.encoder.2.weight:(128, 128)|critic.encoder.2.bias:(128,)|critic.value_head.0.weight:(64, 128)|critic.value_head.0.bias:(64,)|critic.value_head.2.weight:(1, 64)|critic.value_head.2.bias:(1,)|critic.adv_head.0.weight:(64, 130)|critic.adv_head.0.bias:(64,)|critic.adv_head.2.weight:(1, 64)|critic.adv_head.2.bias:(1,)', -38.3726, 6635.99, 1038.0], ['out.logit.mu:(3, 2)|out.logit.sigma:(3, 2)|out.q_value:(3,)|out.value:(3,)', 6.29219, 6.59402, 6.09794]],
    'acer_conv': [',actor,actor.encoder,actor.encoder.torso,actor.encoder.torso.0,actor.encoder.torso.1,actor.encoder.torso.2,actor.encoder.torso.3,actor.encoder.torso.4,actor.encoder.torso.5,actor.encoder.fc,actor.encoder.fc.0,actor.encoder.fc.1,actor.encoder.fc.2,actor.head,actor.head.0,actor.head.1,actor.head.2,critic,critic.encoder,critic.encoder.torso,critic.encoder.torso.0,critic.encoder.torso.1,critic.encoder.torso.2,critic.encoder.torso.3,critic.encoder.torso.4,critic.encoder.torso.5,critic.encoder.fc,critic.encoder.fc.0,critic.encoder.fc.1,critic.encoder.fc.2,critic.q_head,critic.q_head.0,critic.q_head.1,critic.q_head.2', ['actor.encoder.torso.0.weight:(8, 4, 8, 8)|actor.encoder.torso.0.bias:(8,)|actor.encoder.torso.2.weight:(8, 8, 4, 4)|actor.encoder.torso.2.bias:(8,)|actor.encoder.torso.4.weight:(8, 8, 3, 3)|actor.encoder.torso.4.bias:(8,)|actor.encoder.fc.1.weight:(32, 392)|actor.encoder.fc.1.bias:(32,)|actor.head.0.weight:(64, 32)|actor.head.0.bias:(64,)|actor.head.2.weight:(6, 64)|actor.head.2.bias:(6,)|critic.encoder.torso.0.weight:(8, 4, 8, 8)|critic.encoder.torso.0.bias:(8,)|critic.encoder.torso.2.weight:(8, 8, 4, 4)|critic.encoder.torso.2.bias:(8,)|critic.encoder.torso.4.weight:(8, 8, 3, 3)|critic.encoder.torso.4.bias:(8,)|critic.encoder.fc.1.weight:(32, 392)|critic.encoder.fc.1.bias:(32,)|critic.q_head.0.weight:(64, 32)|critic.q_head.0.bias:(64,)|critic.q_head.2.weight:(6, 64)|critic.q_head.2.bias:(6,)', -14.9229, 2702.29, 358.001], ['out.logit:(3, 6)|out.q_value:(3, 6)', 0.777642, 1.18072, 0.11293]],
    'run_impala': ['actor_encoder.0.weight:(64, 4)|actor_encoder.0.bias:(64,)|actor_encoder.2.weight:(64, 64)|actor_encoder.2.bias:(64,)|critic_encoder.0.weight:(64, 4)|critic_encoder.0.bias:(64,)|critic_encoder.2.weight:(64, 64)|critic_encoder.2.bias:(64,)|actor_head.0.weight:(64, 64)|actor_head.0.bias:(64,)|actor_head.2.weight:(2, 64)|actor_head.2.bias:(2,)|critic_head.0.weight:(64, 64)|critic_head.0.bias:(64,)|critic_head.2.weight:(1, 64)|critic_head.2.bias:(1,)', 115.111, 2411.94, 533.902],
    'run_acer': ['actor.encoder.0.weight:(64, 4)|actor.encoder.0.bias:(64,)|actor.encoder.2.weight:(64, 64)|actor.encoder.2.bias:(64,)|actor.head.0.weight:(64, 64)|actor.head.0.bias:(64,)|actor.head.2.weight:(2, 64)|actor.head.2.bias:(2,)|critic.encoder.0.weight:(64, 4)|critic.encoder.0.bias:(64,)|critic.encoder.2.weight:(64, 64)|critic.encoder.2.bias:(64,)|critic.q_head.0.weight:(64, 64)|critic.q_head.0.bias:(64,)|critic.q_head.2.weight:(2, 64)|critic.q_head.2.bias:(2,)', 263.607, 2497.79, 565.504],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PINNED))
def test_feature_off_models_and_runs_unchanged(name, in_tmp):
    global _COMPUTED
    if "_COMPUTED" not in globals():
        _COMPUTED = digests()
    got, want = _COMPUTED[name], PINNED[name]
    assert _structure(got) == _structure(want)
    assert _numbers(got) == pytest.approx(_numbers(want), rel=1e-4, abs=1e-6)


def _structure(value):
    return [v for v in _flat(value) if isinstance(v, str)]


def _numbers(value):
    return [v for v in _flat(value) if not isinstance(v, str)]


def _flat(value):
    for v in value if isinstance(value, list) else [value]:
        if isinstance(v, list):
            yield from _flat(v)
        else:
            yield v


if __name__ == "__main__":
    for key, value in digests().items():
        print(f"    {key!r}: {value!r},")

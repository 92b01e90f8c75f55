"""`ding_lite port` carries DI-engine's prioritised-replay keys over: policy.priority and policy.priority_IS_weight
stay (SAC and ACER read them), and the buffer's alpha / beta / anneal_step (DI-engine's 'advanced' buffer) and
priority_power_factor / IS_weight_power_factor / IS_weight_anneal_train_iter (its newer buffer) move to ding_lite's
priority_* keys of the same section."""
import pytest

from ding_lite.config import compile_config
from ding_lite.port import port_config, render
from ding_lite.utils import ConfigError

from test_port import comments


@pytest.mark.parametrize("buffer_keys", [
    dict(alpha=0.7, beta=0.5, anneal_step=1000),
    dict(priority_power_factor=0.7, IS_weight_power_factor=0.5, IS_weight_anneal_train_iter=1000),
])
@pytest.mark.parametrize("policy", ["sac", "acer"])
def test_priority_keys_carry_over(policy, buffer_keys):
    env = "Pendulum-v1" if policy == "sac" else "CartPole-v1"
    main = dict(env=dict(env_id=env), policy=dict(priority=True, priority_IS_weight=True,
                                                  other=dict(replay_buffer=dict(replay_buffer_size=5000,
                                                                                **buffer_keys))))
    port = port_config(main, dict(policy=dict(type=policy)))
    cfg = compile_config(port.main.to_plain(), port.create.to_plain())
    assert cfg.policy.priority is True and cfg.policy.priority_IS_weight is True
    buf = cfg.policy.other.replay_buffer
    assert (buf.priority_alpha, buf.priority_beta, buf.priority_beta_anneal_steps) == (0.7, 0.5, 1000)
    text = comments(render(port, "in.py", "out.py"))
    for key in buffer_keys:
        assert f"moved policy.other.replay_buffer.{key} -> policy.other.replay_buffer.priority_" in text


def test_impala_with_priority_is_ported_to_uniform_replay_with_the_reason():
    """IMPALA takes no prioritised replay (V-trace): the port removes DI-engine's flags, says why, and compiles."""
    main = dict(env=dict(env_id="CartPole-v1"), policy=dict(priority=True, priority_IS_weight=True))
    port = port_config(main, dict(policy=dict(type="impala")))
    cfg = compile_config(port.main.to_plain(), port.create.to_plain())
    assert cfg.policy.priority is False and cfg.policy.priority_IS_weight is False
    text = comments(render(port, "in.py", "out.py"))
    for key in ("policy.priority", "policy.priority_IS_weight"):
        assert f"removed {key}=True: policy 'impala' takes no prioritised replay" in text, text
    assert "V-trace" in text


def test_impala_without_priority_is_left_alone():
    main = dict(env=dict(env_id="CartPole-v1"), policy=dict(priority=False))
    port = port_config(main, dict(policy=dict(type="impala")))
    assert "priority" not in comments(render(port, "in.py", "out.py"))
    assert compile_config(port.main.to_plain(), port.create.to_plain()).policy.priority is False


def test_an_impala_config_compiled_with_priority_still_refuses_it():
    """Outside the port, the config compiler keeps refusing it, with the reason."""
    main = dict(env=dict(env_id="CartPole-v1"), policy=dict(priority=True))
    with pytest.raises(ConfigError, match="V-trace"):
        compile_config(main, dict(policy=dict(type="impala")))

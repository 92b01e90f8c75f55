"""`ding_lite port` carries DI-engine's prioritised-replay keys over: policy.priority and policy.priority_IS_weight
stay (SAC and ACER read them), and the buffer's alpha / beta / anneal_step (DI-engine's 'advanced' buffer) and
priority_power_factor / IS_weight_power_factor / IS_weight_anneal_train_iter (its newer buffer) move to ding_lite's
priority_* keys of the same section."""
import pytest

from ding_lite.config import compile_config
from ding_lite.config.port import port_config, render
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


def test_impala_with_priority_is_refused_with_the_reason():
    main = dict(env=dict(env_id="CartPole-v1"), policy=dict(priority=True))
    port = port_config(main, dict(policy=dict(type="impala")))
    with pytest.raises(ConfigError, match="V-trace"):
        compile_config(port.main.to_plain(), port.create.to_plain())

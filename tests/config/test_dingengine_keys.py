"""Every key of DI-engine 0.5.3's IMPALA, ACER and SAC configs (tests/config/dingengine_keys.py) compiles in ding_lite,
or fails with its own explained message (never a bare 'unknown key' or a did-you-mean guess), and `ding_lite port`
turns each into a config that compiles, with the key kept or its change as a comment."""
import copy

import pytest

from dingengine_keys import ALL_KEYS, CREATE_KEYS, MAIN_KEYS

from ding_lite.config import compat, compile_config
from ding_lite.port import port_config, render
from ding_lite.utils import ConfigError, UserError

BASE_ENV = {"impala": "CartPole-v1", "acer": "CartPole-v1", "sac": "Pendulum-v1", "discrete_sac": "CartPole-v1"}


def base(policy: str):
    """The smallest config of ``policy`` (40 evaluator episodes: a multiple of every evaluator_env_num above)."""
    main = dict(env=dict(env_id=BASE_ENV[policy], evaluator_env_num=1, n_evaluator_episode=40), policy=dict())
    return main, dict(policy=dict(type=policy))


def with_key(policy: str, key: str, value):
    main, create = base(policy)
    path = key.split(".")
    tree = create if path[0] == "create_config" else main
    if path[0] == "create_config":
        path = path[1:]
    for part in path[:-1]:
        tree = tree.setdefault(part, {})
    tree[path[-1]] = copy.deepcopy(value)
    if key == "create_config.env.type":  # the env comes from the type (mujoco's and atari's name no id)
        del main["env"]["env_id"]
    return main, create


def cases():
    for key, value, policies, where, expected in ALL_KEYS:
        for policy in policies:
            outcome = expected[policy] if isinstance(expected, dict) else expected
            yield pytest.param(key, value, policy, outcome, id=f"{key}={value!r}-{policy}")


def test_the_key_list_names_every_key_once_per_value():
    rows = [(key, repr(value)) for key, value, *_ in ALL_KEYS]
    duplicated = {row for row in rows if rows.count(row) > 1}
    assert not duplicated
    assert len({key for key, *_ in MAIN_KEYS}) == 85 and len({key for key, *_ in CREATE_KEYS}) == 6


@pytest.mark.parametrize("key, value, policy, outcome", list(cases()))
def test_each_di_engine_key_compiles_or_gets_its_explained_message(key, value, policy, outcome):
    if value == "PongNoFrameskip-v4":
        pytest.importorskip("ale_py")  # an Atari id compiles where ale-py (the atari extra) is installed
    main, create = with_key(policy, key, value)
    if outcome == "ok":
        compile_config(main, create)
        return
    with pytest.raises(ConfigError) as info:
        compile_config(main, create)
    lines = [line.strip() for line in str(info.value).splitlines() if not line.endswith("run again:")]
    assert len(lines) == 1, f"one problem expected for {key}: {lines}"
    message = lines[0]
    assert message.startswith((f"{key}: ", f"{key}=")), message
    assert "unknown key" not in message and "did you mean" not in message, message
    reason = message.split(": ", 1)[1]
    if key.startswith("create_config"):
        return check_create_message(key, value, outcome, message)
    if key == "env.env_id":
        new = compat.DI_ENGINE_ENV_IDS.get(value)
        assert (f"env.env_id='{new}'" in reason) if outcome == "renamed" else ("not support" in reason), reason
        return
    if key == "policy.model.action_space":
        assert reason == compat.value_reason(key.split("."), value)
        return
    pattern = compat.main_key_pattern(key.split("."), wildcard=False)
    assert pattern is not None, f"{key} has no entry in compat.MAIN_CONFIG_KEYS"
    assert reason == compat.main_key_reason(key.split("."), policy, wildcard=False)
    assert compat.port_action(pattern) == outcome, f"{key}: the table says {compat.port_action(pattern)}"
    fix = {"moved": "move it there", "no effect": "remove it", "not supported": "remove it"}[outcome]
    assert fix in reason, reason


def check_create_message(key, value, outcome, reason):
    """create_config's messages (raised one at a time, before main_config is validated)."""
    if key == "create_config.env.type" and outcome == "renamed":
        env_id = compat.DIZOO_ENV_IDS.get(value)
        assert (f"env.env_id='{env_id}'" if env_id else "-v5") in reason, reason
    elif key == "create_config.env.type":
        assert "not supported" in reason, reason
    elif key == "create_config.policy.type":
        assert f"'{compat.DI_ENGINE_POLICY_TYPES[value]}'" in reason and "use that" in reason, reason
    elif key == "create_config.env.import_names":
        assert "DI-engine (dizoo) env module" in reason and "remove create_config.env" in reason, reason
    else:
        assert "DI-engine" in reason and "remove it" in reason, reason


@pytest.mark.parametrize("key, value, policy, outcome", list(cases()))
def test_port_keeps_or_comments_each_di_engine_key(key, value, policy, outcome):
    """The port of the key: kept as it is ('ok'), or a comment that names it; and the result compiles."""
    if value == "PongNoFrameskip-v4" or (key, value) == ("create_config.env.type", "atari"):
        pytest.importorskip("ale_py")  # an Atari id compiles where ale-py (the atari extra) is installed
    main, create = with_key(policy, key, value)
    if key in ("policy.model.agent_obs_shape", "policy.model.global_obs_shape"):  # refused: one message
        with pytest.raises(UserError, match=f"not ported: a multi-agent config \\({key}\\)"):
            port_config(main, create)
        return
    port = port_config(main, create)
    text = render(port, "dingengine_config.py", "out.py")
    ported_main, ported_create = port.main.to_plain(), port.create.to_plain()
    if outcome == "ok":  # DI-engine's model sizes, which ding_lite's defaults lack, are written in (port_carry.py)
        changes = [c for c in port.changes if not any(
            carried in c for carried in ("(DI-engine's default)", "(DI-engine's conv sizes)",
                                         "(DI-engine's updates per env step"))]
        assert not changes and not port.todos, changes + port.todos
        compile_config(ported_main, ported_create)
        return
    assert key in text or (key == "create_config.env.type" and "create_config.env.type" in text), text
    pattern = compat.main_key_pattern(key.split("."), wildcard=False)
    todo = (key == "env.env_id" and outcome == "not supported"
            or key == "create_config.env.type" and value in compat.DIZOO_ENV_TYPES  # which env id: not in the type
            or pattern in compat.PORT_TODO and not compat.is_off(pattern, value)
            or key == "env.frame_stack")  # on a non-Atari env (the key alone): DI-engine's dm_control frame stack
    if todo:
        assert port.todos and "TODO(port):" in text  # left for the user
    else:
        assert port.changes and not port.todos, port.todos  # done, with a comment
    if key == "env.env_id" and outcome == "not supported":
        with pytest.raises(ConfigError):
            compile_config(ported_main, ported_create)
        return
    if key == "create_config.env.type" and value == "atari":
        ported_main["env"]["env_id"] = "PongNoFrameskip-v4"  # dizoo's atari configs name their env id
    if key == "create_config.env.type" and value == "mujoco":
        ported_main["env"]["env_id"] = "HalfCheetah-v5"  # dizoo's mujoco configs name their env id
    compile_config(ported_main, ported_create)

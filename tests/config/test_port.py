"""`ding_lite.port`: DI-engine config files (tests/config/fixtures/dingengine_*.py, written from the key lists
of DI-engine's dizoo configs) become ding_lite config files that compile, with every change as a comment."""
import os
import re
import textwrap

import pytest

from ding_lite.config import compile_config, read_config_file
from ding_lite.port import TODO, default_out, port_config, port_file, render
from ding_lite.utils import UserError

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")

# Per fixture: the comments the port must write (each starts a '# ' line), and values of the compiled result.
EXPECTED = {
    "cartpole_impala": (
        ["set env.env_id='CartPole-v1': the gymnasium id of DI-engine's dizoo env type 'cartpole'",
         "changed env.stop_value 195 -> 475: DI-engine's dizoo CartPole is gym's CartPole-v0",
         "removed policy.collect.discount_factor=0.9: has no effect",
         "removed policy.collect.gae_lambda=0.95: has no effect",
         "removed policy.collect.collector.collect_print_freq=1000: ding_lite prints one progress line",
         "removed create_config.env.type='cartpole': DI-engine's dizoo env",
         "removed create_config.env.import_names=['dizoo.classic_control.cartpole.envs.cartpole_env']"],
        {"env.env_id": "CartPole-v1", "env.stop_value": 475, "policy.unroll_len": 8,
         "policy.learn.discount_factor": 0.9, "policy.learn.learning_rate": 0.0005, "policy.collect.n_sample": 16,
         "policy.other.replay_buffer.max_use": 16, "policy.type": "impala", "env.type": "gym"}),
    "cartpole_acer": (
        ["removed policy.learn.unroll_len=32: lives at policy.unroll_len",
         "removed policy.collect.unroll_len=32: lives at policy.unroll_len",
         "removed policy.learn.value_weight=0.5: has no effect for policy 'acer'",
         "removed policy.learn.lambda_=0.95: has no effect for policy 'acer'",
         "removed policy.collect.collector.type='sample': has no effect",
         "removed create_config.replay_buffer.type='naive': DI-engine's buffer types do not exist in ding_lite",
         "set env.env_id='CartPole-v1'"],
        {"env.env_id": "CartPole-v1", "policy.unroll_len": 32, "policy.learn.c_clip_ratio": 10,
         "policy.other.replay_buffer.type": "columnar", "policy.type": "acer"}),
    "pendulum_sac": (
        ["removed env.act_scale=True: has no effect",
         "removed policy.model.action_space='reparameterization': DI-engine's name for SAC's reparameterised",
         "set env.env_id='Pendulum-v1': the gymnasium id of DI-engine's dizoo env type 'pendulum'",
         "removed create_config.env.type='pendulum'"],
        {"env.env_id": "Pendulum-v1", "env.stop_value": -250, "policy.random_collect_size": 1000,
         "policy.learn.ignore_done": True, "policy.model.twin_critic": True, "policy.collect.n_sample": 10,
         "policy.type": "sac"}),
    "cartpole_ppo": (
        ["moved policy.learn.epoch_per_collect -> policy.learn.epochs",
         "moved policy.learn.batch_size -> policy.learn.minibatch_size",
         "moved policy.collect.discount_factor -> policy.learn.discount_factor",
         "moved policy.collect.gae_lambda -> policy.learn.gae_lambda",
         "removed policy.collect.unroll_len: DI-engine's PPO samples are single steps",
         "set policy.unroll_len=32: DI-engine's PPO collects n_sample=256 env steps per collection, 32 per env",
         "set policy.learn.value_clip=0.2: DI-engine's PPO always clips the value loss with clip_ratio",
         "set policy.learn.value_norm=True: DI-engine's default of learn.value_norm",
         "set policy.learn.recompute_adv=True: DI-engine's default of recompute_adv",
         "note: DI-engine's PPO defaults ppo_param_init=True,",
         "changed env.stop_value 195 -> 475"],
        {"env.env_id": "CartPole-v1", "env.stop_value": 475, "policy.type": "ppo", "policy.unroll_len": 32,
         "policy.collect.n_sample": 8, "policy.learn.batch_size": 8, "policy.other.replay_buffer.replay_buffer_size": 8,
         "policy.learn.epochs": 2, "policy.learn.minibatch_size": 64, "policy.learn.discount_factor": 0.9,
         "policy.learn.gae_lambda": 0.95, "policy.learn.value_clip": 0.2, "policy.learn.entropy_weight": 0.01,
         "policy.learn.learning_rate": 0.001, "policy.model.encoder_hidden_size_list": [64, 64, 128],
         "policy.learn.value_norm": True, "policy.learn.recompute_adv": True,
         "policy.other.replay_buffer.max_use": 1}),
}


def comments(text: str) -> str:
    """The comments of a ported file with their wrapped lines joined (one comment per line)."""
    joined = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#   ") and joined:
            joined[-1] += " " + stripped[4:]
        elif stripped.startswith("# "):
            joined.append(stripped[2:])
    return "\n".join(joined)


def lookup(cfg, dotted):
    for key in dotted.split("."):
        cfg = cfg[key]
    return cfg


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_port_writes_a_config_that_compiles_with_every_change_commented(name, tmp_path):
    out = str(tmp_path / f"{name}.py")
    port, written = port_file(os.path.join(FIXTURES, f"dingengine_{name}.py"), out)
    assert written == out and port.problems is None and not port.todos
    text = open(out).read()
    notes = comments(text)
    expected_comments, expected_values = EXPECTED[name]
    for comment in expected_comments:
        assert comment in notes, f"missing comment {comment!r} in:\n{text}"
    assert len(port.changes) == len(notes.splitlines())  # one comment per change
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not any(("import " in line or "EasyDict" in line or "__main__" in line) for line in code)
    cfg = compile_config(read_config_file(out))
    for key, value in expected_values.items():
        assert lookup(cfg, key) == value, key


def test_port_does_not_run_the_main_block(tmp_path):
    marker = tmp_path / "ran"
    src = tmp_path / "cfg.py"
    src.write_text(textwrap.dedent(f"""
        from easydict import EasyDict
        main_config = EasyDict(dict(env=dict(env_id='CartPole-v1'), policy=dict(cuda=False)))
        create_config = EasyDict(dict(policy=dict(type='impala')))
        if __name__ == '__main__':
            open({str(marker)!r}, 'w').close()
            from ding.entry import serial_pipeline
    """))
    port, out = port_file(str(src))
    assert out == str(tmp_path / "cfg_ding_lite.py") and os.path.exists(out)
    assert not marker.exists() and port.problems is None
    assert port.changes[-1] == "removed  the __main__ block (run: ding_lite -m serial -c cfg_ding_lite.py -s 0)"
    assert "removed DI-engine's `if __name__ == \"__main__\":` block" in comments(open(out).read())
    assert "ding_lite -m serial -c cfg_ding_lite.py -s 0" in comments(open(out).read())


def test_a_ported_file_ports_to_itself(tmp_path):
    first = str(tmp_path / "once.py")
    port_file(os.path.join(FIXTURES, "dingengine_cartpole_acer.py"), first)
    again, second = port_file(first, str(tmp_path / "twice.py"))
    assert not again.changes and not again.todos
    assert read_config_file(first) == read_config_file(second)


def test_default_output_is_beside_the_input_and_never_overwritten(tmp_path):
    src = tmp_path / "pendulum_sac_config.py"
    src.write_text(open(os.path.join(FIXTURES, "dingengine_pendulum_sac.py")).read())
    assert default_out(str(src)) == str(tmp_path / "pendulum_sac_config_ding_lite.py")
    _, out = port_file(str(src))
    with open(out, "a") as f:
        f.write("# my edit\n")
    with pytest.raises(UserError, match="pendulum_sac_config_ding_lite.py' exists; pass --force"):
        port_file(str(src))
    assert open(out).read().endswith("# my edit\n")
    port_file(str(src), force=True)
    assert "# my edit" not in open(out).read()
    with pytest.raises(UserError, match="is the input file"):
        port_file(str(src), str(src), force=True)


@pytest.mark.parametrize("content, fragment", [
    (None, "not found"),
    ("main_config = dict(\n", "syntax error"),
    ("x = 1\n", "defines no main_config"),
    ("import ding\nmain_config = {}\n", "ModuleNotFoundError"),
])
def test_missing_or_broken_input_names_the_file_and_writes_nothing(tmp_path, content, fragment):
    src = tmp_path / "broken_config.py"
    if content is not None:
        src.write_text(content)
    with pytest.raises(UserError) as info:
        port_file(str(src))
    assert "broken_config.py" in str(info.value) and fragment in str(info.value)
    assert not os.path.exists(default_out(str(src)))


def test_what_cannot_be_mapped_is_a_todo():
    main = dict(env=dict(env_id="CartPole-v1", continuous=True),
                policy=dict(unroll_len=16, collect=dict(unroll_len=8, n_episode=4),
                            learn=dict(learning_rat=0.1), command=dict(eps=0.1)))
    port = port_config(main, dict(policy=dict(type="impala"), world_model=dict(type="dreamer")))
    text = comments(render(port, "in.py", "out.py"))
    assert f"{TODO} policy.collect.unroll_len=8: lives at policy.unroll_len" in text
    assert "policy.unroll_len=16 is kept, pick one value" in text
    assert f"{TODO} policy.collect.n_episode=4: ding_lite collects by samples" in text
    assert f"{TODO} policy.learn.learning_rat=0.1: unknown key; did you mean policy.learn.learning_rate?" in text
    assert f"{TODO} env.continuous=True: unknown key; arguments of the env itself go under env.kwargs" in text
    assert f"{TODO} create_config.world_model=dict(type='dreamer'): world models are not supported" in text
    assert len(port.todos) == 5
    compile_config(port.main.to_plain(), port.create.to_plain())  # what is left compiles


def test_moves_fill_the_new_place():
    main = dict(env=dict(env_id="CartPole-v1"),
                policy=dict(collect=dict(unroll_len=8), eval=dict(evaluator=dict(n_episode=10, stop_value=400))))
    port = port_config(main, dict(policy=dict(type="impala")))
    cfg = compile_config(port.main.to_plain(), port.create.to_plain())
    assert (cfg.policy.unroll_len, cfg.env.n_evaluator_episode, cfg.env.stop_value) == (8, 10, 400)
    text = comments(render(port, "in.py", "out.py"))
    assert "moved policy.collect.unroll_len -> policy.unroll_len" in text
    assert "moved here from policy.eval.evaluator.stop_value" in text


def test_atari_keeps_its_id_and_moves_frame_stack(tmp_path):
    pytest.importorskip("ale_py")  # Atari ids compile where ale-py (the atari extra) is installed
    src = tmp_path / "pong_config.py"
    src.write_text("main_config = dict(env=dict(env_id='PongNoFrameskip-v4', frame_stack=4))\n"
                   "create_config = dict(env=dict(type='atari', import_names=['dizoo.atari.envs.atari_env']),\n"
                   "                     policy=dict(type='impala'))\n")
    port, out = port_file(str(src))
    assert os.path.exists(out) and port.problems is None and not port.todos
    cfg = compile_config(port.main.to_plain(), port.create.to_plain())
    assert (cfg.env.type, cfg.env.env_id, cfg.env.atari.frame_stack) == ("gym", "PongNoFrameskip-v4", 4)
    text = comments(render(port, "in.py", "out.py"))
    assert "moved env.frame_stack -> env.atari.frame_stack" in text and "DI-engine's Atari env" in text


def test_mujoco_py_ids_become_v5_and_the_obs_shape_is_read_from_the_env():
    main = dict(env=dict(env_id="Ant-v3", norm_obs=dict(use_norm=False), manager=dict(shared_memory=False)),
                policy=dict(model=dict(obs_shape=111, action_shape=8, action_space="reparameterization")))
    create = dict(env=dict(type="mujoco", import_names=["dizoo.mujoco.envs.mujoco_env"]),
                  policy=dict(type="sac", import_names=["ding.policy.sac"]), replay_buffer=dict(type="naive"))
    port = port_config(main, create)
    cfg = compile_config(port.main.to_plain(), port.create.to_plain())
    assert cfg.env.env_id == "Ant-v5" and cfg.policy.model.obs_shape is None and cfg.policy.model.action_shape == 8
    text = comments(render(port, "in.py", "out.py"))
    assert "renamed env.env_id 'Ant-v3' -> 'Ant-v5'" in text and "removed policy.model.obs_shape=111" in text
    assert "removed env.norm_obs=dict(use_norm=False)" in text and not port.todos


def test_type_names_and_inf_are_written_back():
    main = dict(env=dict(env_id="CartPole-v1"), policy=dict(other=dict(replay_buffer=dict(max_use=float("inf")))))
    create = dict(policy=dict(type="sac_discrete"), env_manager=dict(type="async_subprocess"))
    port = port_config(main, create)
    text = render(port, "in.py", "out.py")
    assert "max_use=float('inf')" in text and "type='discrete_sac'" in text and "type='subprocess'" in text
    namespace: dict = {}
    exec(text, namespace)
    cfg = compile_config(namespace["main_config"], namespace["create_config"])
    assert cfg.policy.type == "discrete_sac" and cfg.env.manager.type == "subprocess"


def test_a_policy_ding_lite_does_not_have_is_an_error():
    with pytest.raises(UserError, match="create_config.policy.type='r2d2': ding_lite has no such policy"):
        port_config(dict(env=dict(env_id="CartPole-v1")), dict(policy=dict(type="r2d2")))


def test_a_policy_port_does_not_map_is_an_error():
    with pytest.raises(UserError, match=re.escape("not ported: an off-policy PPO config (create_config.policy.type="
                                                  "'ppo_offpolicy'): DI-engine's PPO that trains on samples replayed")):
        port_config(dict(env=dict(env_id="CartPole-v1")), dict(policy=dict(type="ppo_offpolicy")))
    with pytest.raises(UserError, match=re.escape("not ported: an off-policy PPO config (policy.on_policy=False): ")):
        port_config(dict(env=dict(env_id="CartPole-v1"), policy=dict(on_policy=False)), dict(policy=dict(type="ppo")))


def test_ppo_keys_without_a_counterpart_are_todos_or_removed_when_off():
    """DI-engine's PPO options ding_lite lacks: a TODO(port) naming the key when on, removed when off; DI-engine's
    defaults that differ are written where unset; n_sample steps become unrolls of the env count; DI-engine's
    lr_scheduler form is kept (ding_lite reads it); recompute_adv moves to policy.learn."""
    main = dict(env=dict(env_id="CartPole-v1", collector_env_num=4),
                policy=dict(nstep_return=True, learn=dict(value_norm=True, ppo_param_init=False, kl_beta=0.0,
                                                          kl_type="k1", lr_scheduler=dict(epoch_num=10,
                                                                                          min_lr_lambda=0.1)),
                            collect=dict(n_sample=250, unroll_len=1)))
    port = port_config(main, dict(policy=dict(type="ppo")))
    assert [t.split(":")[0] for t in port.todos] == ["policy.nstep_return=True"]
    assert any("ppo_param_init" in c for c in port.changes) and any("kl_type" in c for c in port.changes)
    plain = port.main.to_plain()
    assert plain["policy"]["unroll_len"] == 63 and plain["policy"]["collect"] == {"n_sample": 4}
    learn = plain["policy"]["learn"]
    assert (learn["epochs"], learn["minibatch_size"], learn["learning_rate"], learn["entropy_weight"]) == (
        10, 64, 3e-4, 0.0)  # DI-engine's defaults
    assert learn["batch_size"] == 4 and learn["value_clip"] == 0.2
    assert learn["value_norm"] is True  # the same option in both: kept
    assert learn["lr_scheduler"] == dict(epoch_num=10, min_lr_lambda=0.1)
    assert learn["recompute_adv"] is True  # DI-engine's default, written where unset
    compile_config(plain, port.create.to_plain())


@pytest.mark.parametrize("value", [True, False])
def test_ppo_recompute_adv_moves_to_learn_with_its_value(value):
    """DI-engine's policy.recompute_adv is ding_lite's policy.learn.recompute_adv: moved with the config's value (not
    replaced by DI-engine's default True), with one comment; the ported config compiles."""
    main = dict(env=dict(env_id="CartPole-v1", collector_env_num=4),
                policy=dict(recompute_adv=value, collect=dict(n_sample=64, unroll_len=1)))
    port = port_config(main, dict(policy=dict(type="ppo")))
    assert not port.todos and "moved    policy.recompute_adv -> policy.learn.recompute_adv" in port.changes
    plain = port.main.to_plain()
    assert "recompute_adv" not in plain["policy"] and plain["policy"]["learn"]["recompute_adv"] is value
    assert compile_config(plain, port.create.to_plain()).policy.learn.recompute_adv is value

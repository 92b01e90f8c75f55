"""compile_config layering and validation, --set parsing, config files and total_config.py round trips."""
import copy
import math
import multiprocessing
import os
import sys
import textwrap

import pytest
from easydict import EasyDict

from ding_lite.config import compile_config, parse_overrides, read_config_file, save_config_py
from ding_lite.config.overrides import expand_dotted, parse_value
from ding_lite.config.save import format_value
from ding_lite.policy import IMPALAPolicy
from ding_lite.utils import POLICY_REGISTRY, ConfigError, RegistryError, UserError

CARTPOLE_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "dizoo_configs",
                               "cartpole_impala.py")

MAIN = dict(
    exp_name="t",
    env=dict(env_id="CartPole-v1", collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1, stop_value=475),
    policy=dict(cuda=False, learn=dict(learning_rate=1e-3)),
)
CREATE = dict(policy=dict(type="impala"))


def main(**sections):
    """MAIN with ``sections`` deep-merged in (``policy=dict(learn=dict(x=1))`` adds policy.learn.x)."""
    cfg = copy.deepcopy(MAIN)
    stack = [(cfg, sections)]
    while stack:
        base, update = stack.pop()
        for key, value in update.items():
            if isinstance(value, dict) and isinstance(base.get(key), dict):
                stack.append((base[key], value))
            else:
                base[key] = value
    return cfg


def error(*args, **kwargs) -> str:
    with pytest.raises(ConfigError) as info:
        compile_config(*args, **kwargs)
    return str(info.value)


@pytest.fixture
def registry_cleanup():
    """Names registered by a test are removed afterwards, so tests do not leak registrations."""
    registered = []
    yield registered
    for registry, name in registered:
        registry._entries.pop(name, None)


# ---- layering ------------------------------------------------------------------------------------------------------
def test_layering_order():
    cfg = compile_config((MAIN, CREATE))
    assert isinstance(cfg, EasyDict)
    assert cfg.policy.type == "impala" and cfg.env.type == "gym" and cfg.env.manager.type == "base"
    # the model and the buffer types the policy declares (IMPALA's default data flow is the 'fifo' buffer)
    assert cfg.policy.model.type == "vac" and cfg.policy.other.replay_buffer.type == "fifo"
    # 1. policy defaults: IMPALA's own over the Policy base class; the model's signature defaults under policy.model.
    assert cfg.policy.learn.batch_size == 16 and cfg.policy.unroll_len == 32
    assert cfg.policy.model.encoder_hidden_size_list == [128, 128]  # a tuple in VAC's signature
    assert cfg.policy.model.obs_shape is None and cfg.policy.model.action_space is None  # filled from the env later
    # 2. env and manager defaults.
    assert cfg.env.kwargs == {} and cfg.env.max_episode_steps is None
    # 3. worker and buffer defaults, under the policy's own: IMPALA's max_use=4 beats the fifo buffer's 1.
    assert cfg.policy.eval.evaluator.eval_freq == 1000
    assert cfg.policy.learn.learner.hook.log_show_after_iter == 100
    assert cfg.policy.other.replay_buffer.max_use == 4 and cfg.policy.other.replay_buffer.max_staleness == math.inf
    # 4. the user's config beats the policy default; env keys too.
    assert cfg.policy.learn.learning_rate == 1e-3 and cfg.env.collector_env_num == 2
    assert cfg.exp_name == "t" and cfg.seed == 0
    # 5. overrides beat the user; the seed/exp_name arguments beat overrides.
    cfg = compile_config(MAIN, CREATE, ["policy.learn.learning_rate=3e-4", "seed=3", "exp_name=x"], seed=5)
    assert cfg.policy.learn.learning_rate == 3e-4 and cfg.seed == 5 and cfg.exp_name == "x"
    cfg = compile_config(MAIN, CREATE, {"policy.learn.learning_rate": 2e-4}, exp_name="y")
    assert cfg.policy.learn.learning_rate == 2e-4 and cfg.exp_name == "y"


def test_policy_sections_beat_worker_defaults_and_user_beats_both(registry_cleanup):
    class LayerPolicy(IMPALAPolicy):
        config = dict(eval=dict(evaluator=dict(eval_freq=7)), learn=dict(learner=dict(hook=dict(
            log_show_after_iter=9))))

    POLICY_REGISTRY.register("layer_test_policy", LayerPolicy)
    registry_cleanup.append((POLICY_REGISTRY, "layer_test_policy"))
    create = dict(policy=dict(type="layer_test_policy"))
    cfg = compile_config(MAIN, create)
    assert cfg.policy.eval.evaluator.eval_freq == 7 and cfg.policy.learn.learner.hook.log_show_after_iter == 9
    assert cfg.policy.learn.learner.hook.save_ckpt_after_iter == 10000  # the worker default beneath
    cfg = compile_config(main(policy=dict(eval=dict(evaluator=dict(eval_freq=11)))), create)
    assert cfg.policy.eval.evaluator.eval_freq == 11


def test_default_exp_name_and_types_from_main_config():
    cfg = compile_config(main(exp_name="", policy=dict(type="impala")))
    assert cfg.exp_name == "CartPole-v1_impala" and cfg.policy.type == "impala"
    # a 'package:id' env id names the run by the id alone (no ':' in a directory name)
    cfg = compile_config(main(exp_name="", env=dict(env_id="gymnasium.envs.classic_control:CartPole-v1"),
                              policy=dict(type="impala")))
    assert cfg.exp_name == "CartPole-v1_impala"


def test_inputs_are_not_mutated():
    main_cfg, create = copy.deepcopy(MAIN), copy.deepcopy(CREATE)
    compile_config(main_cfg, create, {"policy.learn.batch_size": 8})
    assert main_cfg == MAIN and create == CREATE


# ---- unknown keys, types, values -----------------------------------------------------------------------------------
def test_typo_in_main_config_suggests_full_path():
    message = error(main(policy=dict(learn=dict(learning_rat=1e-3))), CREATE)
    assert message == "policy.learn.learning_rat: unknown key; did you mean policy.learn.learning_rate?"


def test_typo_in_set_suggests_full_path_and_names_source():
    message = error(MAIN, CREATE, ["policy.learn.learning_rat=3e-4"])
    assert message == "policy.learn.learning_rat: unknown key; did you mean policy.learn.learning_rate? (from --set)"


def test_misplaced_key_says_where_it_lives():
    message = error(main(policy=dict(batch_size=32)), CREATE)
    assert message == "policy.batch_size: unknown key; it lives at policy.learn.batch_size in ding_lite; move it there"


def test_unknown_key_without_close_match_lists_valid_keys():
    message = error(main(policy=dict(eval=dict(evaluator=dict(zzz=1)))), CREATE)
    assert message == ("policy.eval.evaluator.zzz: unknown key; valid keys at policy.eval.evaluator: eval_freq, "
                       "video_dir, video_every")


def test_wrong_types():
    assert error(MAIN, CREATE, ["policy.learn.batch_size='64'"]) == \
        "policy.learn.batch_size='64': expected int, got str (from --set)"
    assert error(main(policy=dict(learn=dict(batch_size="64"))), CREATE) == \
        "policy.learn.batch_size='64': expected int, got str"
    assert "expected bool, got int" in error(main(policy=dict(cuda=1)), CREATE)
    assert "(write 100000)" in error(main(policy=dict(other=dict(replay_buffer=dict(replay_buffer_size=1e5)))),
                                     CREATE)
    assert error(main(policy=dict(learn="fast")), CREATE) == "policy.learn='fast': expected dict, got str"


def test_accepted_types():
    cfg = compile_config(main(policy=dict(learn=dict(learning_rate=1, grad_clip_type="clip_norm", clip_value=5),
                                          model=dict(encoder_hidden_size_list=(64, 64)),
                                          other=dict(replay_buffer=dict(max_use=4, max_staleness=100)))), CREATE)
    assert cfg.policy.learn.learning_rate == 1 and cfg.policy.model.encoder_hidden_size_list == (64, 64)
    assert cfg.policy.other.replay_buffer.max_staleness == 100


def test_none_turns_gradient_clipping_off_where_the_default_clips():
    """DQN and PPO clip by default ('clip_norm'): None, the documented 'off', is taken; another type is not."""
    dqn = (dict(env=dict(env_id="CartPole-v1")), dict(policy=dict(type="dqn")))
    assert compile_config(dqn).policy.learn.grad_clip_type == "clip_norm"
    assert compile_config(dqn, overrides={"policy.learn.grad_clip_type": None}).policy.learn.grad_clip_type is None
    with pytest.raises(ConfigError, match="policy.learn.grad_clip_type=1: expected str, got int"):
        compile_config(dqn, overrides={"policy.learn.grad_clip_type": 1})


def test_impossible_values():
    assert error(MAIN, CREATE, ["policy.learn.batch_size=-64"]) == "policy.learn.batch_size=-64: must be at least 1"
    assert "policy.learn.optim='sgd'" in error(MAIN, CREATE, ["policy.learn.optim=sgd"])
    assert "env.n_evaluator_episode=3 is not a multiple" in error(MAIN, CREATE, ["env.evaluator_env_num=2",
                                                                                   "env.n_evaluator_episode=3"])
    assert "policy.eval.evaluator.eval_freq=0" in error(MAIN, CREATE, ["policy.eval.evaluator.eval_freq=0"])


# ---- NaN and infinity ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("override, expected", [
    ("policy.learn.learning_rate=inf", "policy.learn.learning_rate=inf: must be a finite number (from --set)"),
    ("policy.learn.learning_rate=-inf", "policy.learn.learning_rate=-inf: must be a finite number (from --set)"),
    ("policy.learn.learning_rate=nan", "policy.learn.learning_rate=nan: must be a finite number (from --set)"),
    ("policy.learn.entropy_weight=nan", "policy.learn.entropy_weight=nan: must be a finite number (from --set)"),
    ("policy.model.encoder_hidden_size_list=[64, nan]",
     "policy.model.encoder_hidden_size_list[1]=nan: must be a finite number (from --set)"),
    ("env.stop_value=inf", "env.stop_value=inf: must be a finite number, or None to leave it unset (from --set)"),
    ("env.stop_value=nan", "env.stop_value=nan: must be a finite number, or None to leave it unset (from --set)"),
    ("env.kwargs.bounds=[1.0, [2.0, -inf]]", "env.kwargs.bounds[1][1]=-inf: must be a finite number (from --set)"),
    ("env.kwargs.g=nan", "env.kwargs.g=nan: must be a finite number (from --set)"),
    ("policy.other.replay_buffer.max_use=nan",
     "policy.other.replay_buffer.max_use=nan: must be a number, or inf for no limit (from --set)"),
])
def test_non_finite_overrides_are_refused(override, expected):
    assert error(MAIN, CREATE, [override]) == expected


def test_non_finite_in_main_config_is_refused():
    assert error(main(policy=dict(learn=dict(learning_rate=float("inf")))), CREATE) == \
        "policy.learn.learning_rate=inf: must be a finite number"
    assert error(main(env=dict(kwargs=dict(opts=dict(scale=float("nan"))))), CREATE) == \
        "env.kwargs.opts.scale=nan: must be a finite number"
    sac = dict(env=dict(env_id="Pendulum-v1"), policy=dict(type="sac", learn=dict(target_entropy=-math.inf)))
    assert error(sac) == "policy.learn.target_entropy=-inf: must be a finite number, or None to leave it unset"
    assert error(MAIN, CREATE, {"policy.learn.learning_rate": float("nan")}) == \
        "policy.learn.learning_rate=nan: must be a finite number (from overrides)"


def test_inf_is_accepted_where_the_default_is_inf():
    # max_use: IMPALA's default 4 shadows the buffer's inf; max_staleness and parallel.max_staleness default to inf.
    cfg = compile_config(MAIN, CREATE, ["policy.other.replay_buffer.type=columnar",
                                        "policy.other.replay_buffer.max_use=inf", "parallel.max_staleness=inf",
                                        "policy.other.replay_buffer.max_staleness=inf"])
    assert cfg.policy.other.replay_buffer.max_use == math.inf and cfg.parallel.max_staleness == math.inf
    cfg = compile_config(main(policy=dict(other=dict(replay_buffer=dict(type="columnar", max_use=float("inf"))))),
                         CREATE)
    assert cfg.policy.other.replay_buffer.max_use == math.inf
    # IMPALA's default 'fifo' buffer trains on each sample max_use times: inf is refused, naming the way out
    assert "max_use=inf: the 'fifo' buffer trains on each sample max_use times" in \
        error(MAIN, CREATE, ["policy.other.replay_buffer.max_use=inf"])


def test_unknown_policy_type_lists_registered_names():
    with pytest.raises(RegistryError) as info:
        compile_config(MAIN, dict(policy=dict(type="impal")))
    assert "did you mean impala" in str(info.value) and "impala" in str(info.value).split("registered")[-1]


def test_missing_policy_type():
    assert error(MAIN).startswith("no policy type given")


def test_unknown_gym_id_suggests_close_id():
    message = error(main(env=dict(env_id="CartPol-v1")), CREATE)
    assert message.startswith("env.env_id='CartPol-v1': unknown gymnasium env id; did you mean CartPole-v1?")


def test_free_form_env_kwargs():
    cfg = compile_config(main(env=dict(env_id="LunarLander-v3", kwargs=dict(continuous=True, gravity=-9.0))), CREATE,
                         ["env.kwargs.enable_wind=true"])
    assert cfg.env.kwargs == dict(continuous=True, gravity=-9.0, enable_wind=True)


def test_cfg_type_is_dropped():
    cfg = compile_config(main(policy=dict(cfg_type="IMPALAPolicyDict"), env=dict(manager=dict(cfg_type="X"))), CREATE)
    assert "cfg_type" not in cfg.policy and "cfg_type" not in cfg.env.manager


# ---- DI-engine keys --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("section, expected", [
    (dict(policy=dict(collect=dict(unroll_len=32))),
     "policy.collect.unroll_len: lives at policy.unroll_len in ding_lite (DI-engine reads it in two places); "
     "move it there"),
    (dict(policy=dict(random_collect_size=256)), "policy.random_collect_size: has no effect for policy 'impala'"),
    (dict(policy=dict(collect=dict(collector=dict(collect_print_freq=1000)))),
     "policy.collect.collector.collect_print_freq: ding_lite prints one progress line every "
     "policy.learn.learner.hook.log_show_after_iter iterations; remove it"),
    (dict(env=dict(manager=dict(shared_memory=False))), "env.manager.shared_memory: has no effect"),
    (dict(env=dict(manager=dict(episode_num=10))), "env.manager.episode_num: has no effect"),
    (dict(env=dict(manager=dict(step_timeout=60))), "env.manager.step_timeout: is not an option"),
    (dict(policy=dict(learn=dict(learner=dict(hook=dict(load_ckpt_before_run=""))))),
     "policy.learn.learner.hook.load_ckpt_before_run: ding_lite loads checkpoints from the command line: use --resume"),
    (dict(policy=dict(eval=dict(evaluator=dict(n_episode=5)))),
     "policy.eval.evaluator.n_episode: lives at env.n_evaluator_episode"),
    (dict(policy=dict(learn=dict(ignore_done=True))), "policy.learn.ignore_done: has no effect"),
    (dict(policy=dict(transition_with_policy_data=True)), "policy.transition_with_policy_data: has no effect"),
    (dict(policy=dict(learn=dict(train_iterations=10))), "policy.learn.train_iterations: has no effect"),
    (dict(policy=dict(learn=dict(multi_gpu=False))), "policy.learn.multi_gpu: has no effect"),
    (dict(policy=dict(collect=dict(n_episode=8))),
     "policy.collect.n_episode: ding_lite collects by samples (policy.collect.n_sample)"),
    (dict(env=dict(continuous=True)), "env.continuous: unknown key; arguments of the env itself go under env.kwargs"),
])
def test_di_engine_keys_fail_with_reason(section, expected):
    assert error(main(**section), CREATE).startswith(expected)


def test_di_engine_model_keys_are_fine():
    cfg = compile_config(main(policy=dict(model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[64, 64],
                                                      critic_head_layer_num=1, actor_head_layer_num=1))), CREATE)
    assert cfg.policy.model.obs_shape == 4 and cfg.policy.model.encoder_hidden_size_list == [64, 64]


def test_di_engine_create_config():
    dizoo = dict(env=dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"]),
                 env_manager=dict(type="base"), policy=dict(type="impala"), replay_buffer=dict(type="naive"))
    assert "env.env_id='CartPole-v1'" in error(MAIN, dizoo)
    dizoo["env"] = dict(type="cartpole")
    assert "env.env_id='CartPole-v1'" in error(MAIN, dizoo)
    del dizoo["env"]
    assert error(MAIN, dizoo).startswith("create_config.replay_buffer.type='naive': DI-engine's buffer types")
    del dizoo["replay_buffer"]
    assert compile_config(MAIN, dizoo).env.manager.type == "base"
    assert error(MAIN, dict(dizoo, collector=dict(type="sample"))).startswith("create_config.collector:")
    assert "DI-engine module" in error(MAIN, dict(policy=dict(type="impala", import_names=["ding.policy.impala"])))
    assert "did you mean type" in error(MAIN, dict(policy=dict(typ="impala")))


def test_unknown_component_types_are_registry_errors():
    for create in (dict(policy=dict(type="impala", model=dict(type="vacc"))), dict(CREATE, env=dict(type="gymm")),
                   dict(CREATE, env_manager=dict(type="subproc")), dict(CREATE, replay_buffer=dict(type="col"))):
        with pytest.raises(RegistryError):
            compile_config(MAIN, create)


def test_subprocess_manager_defaults():
    cfg = compile_config(MAIN, dict(CREATE, env_manager=dict(type="subprocess")))
    # the fork server where the platform has one (Linux, macOS), else spawn (Windows): utils/start_method.py
    expected = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    assert cfg.env.manager.type == "subprocess" and cfg.env.manager.context == expected


# ---- overrides -----------------------------------------------------------------------------------------------------
def test_parse_overrides_values():
    tree = parse_overrides(["a.int=64", "a.float=3e-4", "a.neg=-1", "a.list=[64, 64]", "a.tuple=(1, 2)",
                            "a.str=adam", "a.quoted='clip_norm'", "a.t=true", "a.f=False", "a.n=none",
                            "a.null=NULL", "a.inf=inf", "a.ninf=-inf", "a.id=CartPole-v1", "a.eq=x=y",
                            "a.dict={'continuous': True}", "b=1", "a.int=65"])
    assert tree == dict(a=dict(int=65, float=3e-4, neg=-1, list=[64, 64], tuple=(1, 2), str="adam",
                               quoted="clip_norm", t=True, f=False, n=None, null=None, inf=math.inf,
                               ninf=-math.inf, id="CartPole-v1", eq="x=y", dict={"continuous": True}), b=1)
    assert math.isnan(parse_value("nan"))
    assert parse_value("[-inf, INF, 1e3]") == [-math.inf, math.inf, 1e3]
    assert parse_value("{'a': (true, none)}") == {"a": (True, None)}
    assert math.isnan(parse_value("[nan]")[0])
    assert parse_value("[x, inf]") == "[x, inf]" and parse_value("-nan") != "-nan"


def test_parse_overrides_errors():
    with pytest.raises(UserError, match="policy.learn.batch_size"):
        parse_overrides(["policy.learn.batch_size"])
    with pytest.raises(UserError, match="dotted key path"):
        parse_overrides(["policy..x=1"])
    with pytest.raises(UserError, match="conflicts"):
        parse_overrides(["policy.learn=1", "policy.learn.batch_size=2"])


def test_dotted_dict_overrides():
    assert expand_dotted({"policy.learn.batch_size": 8, "policy": {"learn.discount_factor": 0.9}}) == \
        {"policy": {"learn": {"batch_size": 8, "discount_factor": 0.9}}}
    cfg = compile_config(MAIN, CREATE, {"policy.learn.batch_size": 8, "env": {"stop_value": 10}})
    assert cfg.policy.learn.batch_size == 8 and cfg.env.stop_value == 10
    assert error(MAIN, CREATE, {"policy.learn.batchsize": 8}).endswith(
        "did you mean policy.learn.batch_size? (from overrides)")


def test_override_can_choose_types():
    cfg = compile_config(MAIN, CREATE, ["env.manager.type=subprocess", "env.manager.context=fork"])
    assert cfg.env.manager.type == "subprocess" and cfg.env.manager.context == "fork"


# ---- config files --------------------------------------------------------------------------------------------------
def write(path, text):
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_read_config_file_errors(tmp_path):
    with pytest.raises(UserError, match="config file '.*nope.py' not found"):
        read_config_file(str(tmp_path / "nope.py"))
    with pytest.raises(UserError, match="not a .py file"):
        read_config_file(write(tmp_path / "c.yaml", "a: 1\n"))
    with pytest.raises(UserError, match=r"bad\.py:3: syntax error"):
        read_config_file(write(tmp_path / "bad.py", "x = 1\n\nmain_config = dict(a=\n"))
    with pytest.raises(UserError, match=r"boom\.py:2\): NameError"):
        read_config_file(write(tmp_path / "boom.py", "x = 1\nmain_config = dict(a=undefined_name)\n"))
    with pytest.raises(UserError) as info:
        read_config_file(write(tmp_path / "empty.py", "x = dict()\n"))
    assert str(info.value) == ("empty.py defines no main_config; a config file defines main_config (and "
                               "create_config) dicts")


def test_read_config_file_suggests_the_missing_line(tmp_path):
    path = write(tmp_path / "cartpole_impala_config.py", """
        cartpole_impala_config = dict(exp_name='x')
        cartpole_impala_create_config = dict(policy=dict(type='impala'))
    """)
    with pytest.raises(UserError) as info:
        read_config_file(path)
    assert ("add `main_config = cartpole_impala_config` and `create_config = cartpole_impala_create_config`"
            in str(info.value))


def test_read_config_file_with_sibling_import(tmp_path):
    write(tmp_path / "common_settings.py", "LR = 3e-4\n")
    path = write(tmp_path / "cfg.py", f"""
        from easydict import EasyDict
        from common_settings import LR
        main_config = EasyDict({MAIN!r})
        main_config.policy.learn.learning_rate = LR
    """)
    main_cfg, create = read_config_file(path)
    assert create == {} and str(tmp_path) not in sys.path
    assert compile_config(main_cfg, CREATE).policy.learn.learning_rate == 3e-4
    sys.modules.pop("common_settings", None)


def test_save_round_trip_with_inf(tmp_path):
    cfg = compile_config(MAIN, CREATE, ["policy.other.replay_buffer.type=columnar",
                                        "policy.other.replay_buffer.max_use=inf", "env.kwargs.x=(1, 2)",
                                        "policy.model.encoder_hidden_size_list=(32,)", "parallel.max_staleness=inf"],
                         save_path=str(tmp_path))
    cfg.env.kwargs.long = list(range(80))  # wrapped over several lines in the file
    saved = tmp_path / "total_config.py"
    save_config_py(cfg, str(saved))
    text = saved.read_text()
    assert "max_use=float('inf')" in text and "max_staleness=float('inf')" in text
    assert "create_config = dict(" in text and "type='impala'" in text
    main_cfg, create = read_config_file(str(saved))
    assert create["policy"]["model"]["type"] == "vac" and "type" not in main_cfg["policy"]
    again = compile_config(main_cfg, create)
    assert again == cfg and again.env.kwargs.x == (1, 2) and again.env.kwargs.long == list(range(80))
    save_config_py(again, str(tmp_path / "again.py"))
    assert (tmp_path / "again.py").read_text() == text


def test_format_value_writes_non_finite_floats():
    assert format_value([float("-inf"), float("inf")]) == "[float('-inf'), float('inf')]"
    assert format_value(float("nan")) == "float('nan')"


def test_save_refuses_unwritable_values(tmp_path):
    cfg = compile_config(MAIN, CREATE, {"env.kwargs.f": object()})
    with pytest.raises(ConfigError, match="env.kwargs.f="):
        save_config_py(cfg, str(tmp_path / "x.py"))


# ---- user components -----------------------------------------------------------------------------------------------
def test_user_policy_via_import_names(tmp_path, monkeypatch, registry_cleanup):
    write(tmp_path / "my_test_policy_mod.py", """
        from ding_lite.policy import IMPALAPolicy
        from ding_lite.utils import POLICY_REGISTRY

        @POLICY_REGISTRY.register('my_test_policy')
        class MyPolicy(IMPALAPolicy):
            config = dict(type='my_test_policy', learn=dict(my_coef=0.25))
    """)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry_cleanup.append((POLICY_REGISTRY, "my_test_policy"))
    create = dict(policy=dict(type="my_test_policy", import_names=["my_test_policy_mod"]))
    try:
        cfg = compile_config(main(policy=dict(learn=dict(my_coef=0.5))), create)
        assert cfg.policy.type == "my_test_policy" and cfg.policy.import_names == ["my_test_policy_mod"]
        assert cfg.policy.learn.my_coef == 0.5 and cfg.policy.model.type == "vac"
        assert error(main(policy=dict(learn=dict(my_cof=1.0))), create).endswith("did you mean policy.learn.my_coef?")
    finally:
        sys.modules.pop("my_test_policy_mod", None)
    with pytest.raises(UserError, match="cannot import module 'no_such_mod'"):
        compile_config(MAIN, dict(policy=dict(type="impala", import_names=["no_such_mod"])))


def test_user_env_buffer_and_kwargs_model(registry_cleanup):
    import torch

    from ding_lite.envs import EnvConfig
    from ding_lite.utils import BUFFER_REGISTRY, ENV_REGISTRY, MODEL_REGISTRY, Configurable

    class MyEnv(EnvConfig):
        config = dict(env_id="CartPole-v1", difficulty=1, options=dict())
        free_form = ("kwargs", "options")

    class MyBuffer(Configurable):
        config = dict(replay_buffer_size=10, alpha=0.6)

    class MyModel(torch.nn.Module):
        def __init__(self, obs_shape, action_shape, hidden=(8,), **extra):
            super().__init__()

    for registry, name, obj in ((ENV_REGISTRY, "cfg_test_env", MyEnv), (BUFFER_REGISTRY, "cfg_test_buffer", MyBuffer),
                                (MODEL_REGISTRY, "cfg_test_model", MyModel)):
        registry.register(name, obj, force_overwrite=True)
        registry_cleanup.append((registry, name))
    create = dict(env=dict(type="cfg_test_env"), replay_buffer=dict(type="cfg_test_buffer"),
                  policy=dict(type="impala", model=dict(type="cfg_test_model")))
    cfg = compile_config(main(env=dict(difficulty=3, options=dict(anything=1)),
                              policy=dict(model=dict(hidden=[4], whatever=2),
                                          other=dict(replay_buffer=dict(alpha=0.5)))), create)
    assert cfg.env.type == "cfg_test_env" and cfg.env.difficulty == 3 and cfg.env.options == dict(anything=1)
    assert cfg.policy.model == dict(type="cfg_test_model", import_names=[], obs_shape=None, action_shape=None,
                                    hidden=[4], whatever=2)
    # The policy's replay_buffer section (IMPALA: size 256, max_use 4) still sits above the buffer's defaults.
    assert cfg.policy.other.replay_buffer == dict(type="cfg_test_buffer", import_names=[], replay_buffer_size=256,
                                                  alpha=0.5, max_use=4)
    assert error(main(env=dict(dificulty=3)), create) == "env.dificulty: unknown key; did you mean env.difficulty?"


def test_compiled_config_compiles_to_itself():
    cfg = compile_config(MAIN, CREATE, ["env.kwargs.sutton_barto_reward=True"])
    assert compile_config(cfg) == cfg


def test_config_imports_name_what_a_fresh_process_needs():
    """A spawned worker imports ding_lite's components, then each section's import_names (with where they come
    from, for the error message) before its registry lookups."""
    from ding_lite.config import config_imports

    cfg = compile_config(MAIN, CREATE)
    cfg.policy.import_names = ["my_pkg.my_policy"]
    imports = config_imports(cfg)
    assert imports[0] == (["ding_lite.envs", "ding_lite.model", "ding_lite.policy", "ding_lite.data",
                           "ding_lite.worker"], "ding_lite")
    assert (["my_pkg.my_policy"], "policy.import_names") in imports
    assert {where for _, where in imports[1:]} == {"policy.import_names", "policy.model.import_names",
                                                   "env.import_names", "env.manager.import_names",
                                                   "policy.other.replay_buffer.import_names"}


def test_every_problem_is_reported_at_once_sorted_by_path():
    """A misspelt key, a wrong type, NaN (from --set) and an impossible value: one error naming all four in key-path
    order; a value check still runs although the layers had problems."""
    main, create = read_config_file(CARTPOLE_CONFIG)
    main = copy.deepcopy(main)
    main["policy"]["learn"].update(learning_rat=0.1, batch_size=-1)
    main["env"]["collector_env_num"] = "8"
    with pytest.raises(ConfigError) as info:
        compile_config((main, create), overrides=["policy.learn.entropy_weight=nan"])
    lines = str(info.value).splitlines()
    assert lines[0] == "4 problems in the config; fix them all, then run again:"
    problems = [line.strip() for line in lines[1:]]
    assert problems == sorted(problems) and len(problems) == 4
    assert problems[0].startswith("env.collector_env_num='8': expected int")
    assert problems[1] == "policy.learn.batch_size=-1: must be at least 1"
    assert problems[2].startswith("policy.learn.entropy_weight=nan: must be a finite number (from --set)")
    assert problems[3].startswith("policy.learn.learning_rat: unknown key; did you mean policy.learn.learning_rate?")


def test_one_problem_is_one_line():
    with pytest.raises(ConfigError) as info:
        compile_config(read_config_file(CARTPOLE_CONFIG), overrides=["policy.learn.batch_size=-1"])
    assert str(info.value) == "policy.learn.batch_size=-1: must be at least 1"


PENDULUM_SAC = os.path.join(os.path.dirname(CARTPOLE_CONFIG), "pendulum_sac.py")


@pytest.mark.parametrize("override, reason", [
    ("policy.learn.value_network=False", "no separate value network"),
    ("policy.collect.noise_sigma=0.1", "no added noise"),
    ("policy.model.actor_head_type='reparameterization'", "always the reparameterised squashed Gaussian"),
])
def test_standard_di_engine_sac_keys_get_their_reason_not_a_guess(override, reason):
    with pytest.raises(ConfigError) as info:
        compile_config(read_config_file(PENDULUM_SAC), overrides=[override])
    message = str(info.value)
    assert message.startswith(override.split("=")[0] + ": ") and reason in message and "remove it" in message
    assert "did you mean" not in message


def test_did_you_mean_only_where_the_suggested_key_takes_the_value():
    with pytest.raises(ConfigError, match=r"did you mean policy\.learn\.batch_size\?"):
        compile_config(read_config_file(CARTPOLE_CONFIG), overrides=["policy.learn.batch_sise=32"])
    with pytest.raises(ConfigError) as info:  # a string is no misspelt batch size
        compile_config(read_config_file(CARTPOLE_CONFIG), overrides=["policy.learn.batch_sise='large'"])
    assert "did you mean" not in str(info.value) and "valid keys at policy.learn" in str(info.value)


def test_act_scale_message_says_sac_rescales():
    with pytest.raises(ConfigError, match="rescaled to the bounds"):
        compile_config(read_config_file(PENDULUM_SAC), overrides=["env.act_scale=True"])


def test_an_exp_name_ending_in_its_seed_is_not_doubled():
    from ding_lite.run.run_dir import run_dir_name
    assert run_dir_name("pendulum_sac_seed0", 0) == "pendulum_sac_seed0"
    assert run_dir_name("pendulum_sac_seed0", 1) == "pendulum_sac_seed0_seed1"
    assert run_dir_name("pendulum_sac", 2) == "pendulum_sac_seed2"

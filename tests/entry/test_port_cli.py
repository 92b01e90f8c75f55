"""`ding_lite port FILE [-o OUT] [--force]`: exit 0 with the changes listed when OUT compiles; exit 2, one line on
stderr naming the file, when FILE is missing or broken, when OUT exists, or when OUT does not compile yet."""
import os

import pytest

from entry_helpers import REPO

from ding_lite.config import compile_config, read_config_file

FIXTURES = os.path.join(REPO, "tests", "config", "fixtures")
CARTPOLE = os.path.join(FIXTURES, "dingengine_cartpole_impala.py")


def test_port_writes_beside_the_input_and_lists_the_changes(cli, in_tmp):
    src = in_tmp / "cartpole_impala_config.py"
    src.write_text(open(CARTPOLE).read())
    res = cli("port", str(src))
    out = in_tmp / "cartpole_impala_config_ding_lite.py"
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == f"ported {src} -> {out}: 8 changes, 0 TODO(port)"
    assert f"  removed  the __main__ block (run: ding_lite -m serial -c {out.name} -s 0)" in lines
    assert "  set      env.env_id='CartPole-v1' (from the dizoo env type 'cartpole')" in lines
    assert "  removed  policy.collect.gae_lambda" in lines
    assert lines[-1] == f"{out} compiles with ding_lite; run it with: ding_lite -m serial -c {out} -s 0"
    assert res.stderr == ""
    assert compile_config(read_config_file(str(out))).env.env_id == "CartPole-v1"


def test_port_to_a_named_output_then_refuse_to_overwrite_it(cli, in_tmp):
    res = cli("port", CARTPOLE, "-o", "mine.py")
    assert res.exit_code == 0 and os.path.exists("mine.py")
    before = open("mine.py").read()
    res = cli("port", CARTPOLE, "-o", "mine.py")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.strip() == ("ding_lite: error: output 'mine.py' exists; pass --force to overwrite it, or name "
                                  "another file with -o")
    assert open("mine.py").read() == before
    assert cli("port", CARTPOLE, "-o", "mine.py", "--force").exit_code == 0


@pytest.mark.parametrize("content, fragment", [
    (None, "config file 'dingengine_bad.py' not found"),
    ("main_config = dict(\n", "dingengine_bad.py:1: syntax error in config file"),
    ("cartpole_config = dict(env=dict())\n", "dingengine_bad.py defines no main_config"),
])
def test_a_missing_or_bad_file_is_exit_2_naming_it(cli, in_tmp, content, fragment):
    if content is not None:
        (in_tmp / "dingengine_bad.py").write_text(content)
    res = cli("port", "dingengine_bad.py")
    assert res.exit_code == 2 and res.stdout == ""
    line = res.stderr.strip()
    assert line.startswith("ding_lite: error: ") and fragment in line and "\n" not in line
    assert sorted(os.listdir(in_tmp)) == (["dingengine_bad.py"] if content else [])


def test_an_output_that_does_not_compile_is_exit_2_and_kept(cli, in_tmp):
    # A dizoo MuJoCo config without an env id: the port cannot know which -v5 env to set.
    (in_tmp / "mujoco_config.py").write_text(
        "main_config = dict(env=dict(norm_obs=dict(use_norm=True)))\n"
        "create_config = dict(env=dict(type='mujoco'), policy=dict(type='sac'))\n")
    res = cli("port", "mujoco_config.py")
    assert res.exit_code == 2
    assert "2 TODO(port)" in res.stdout and "does not compile yet" in res.stdout
    assert res.stderr.startswith("ding_lite: error: mujoco_config_ding_lite.py does not compile yet: "
                                 "env.env_id must name a gymnasium env id")
    assert "TODO(port): env.norm_obs=dict(use_norm=True)" in open("mujoco_config_ding_lite.py").read()


def test_todos_that_compile_are_exit_0_and_listed(cli, in_tmp):
    (in_tmp / "c.py").write_text("main_config = dict(env=dict(env_id='CartPole-v1'), policy=dict(collect=dict("
                                 "n_episode=4)))\ncreate_config = dict(policy=dict(type='impala'))\n")
    res = cli("port", "c.py")
    assert res.exit_code == 0
    assert "  TODO     policy.collect.n_episode=4: ding_lite collects by samples" in res.stdout
    assert "read its TODO(port) lines" in res.stdout.splitlines()[-1]


def test_port_needs_a_file(cli):
    res = cli("port")
    assert res.exit_code == 2 and "Missing argument 'FILE'" in res.stderr


def test_a_multi_agent_config_is_refused_in_one_line(cli, in_tmp):
    (in_tmp / "ma.py").write_text("main_config = dict(env=dict(env_id='CartPole-v1'), policy=dict(multi_agent=True))\n"
                                  "create_config = dict(policy=dict(type='discrete_sac'))\n")
    res = cli("port", "ma.py")
    assert res.exit_code == 2 and res.stdout == "" and not os.path.exists("ma_ding_lite.py")
    line = res.stderr.strip()
    assert "\n" not in line and line.startswith("ding_lite: error: ma.py: not ported: a multi-agent config")


def test_walk_prints_the_table(cli, in_tmp):
    tree = in_tmp / "dizoo" / "classic_control" / "cartpole" / "config"
    tree.mkdir(parents=True)
    (tree / "cartpole_impala_config.py").write_text(open(CARTPOLE).read())
    (tree / "cartpole_ma_config.py").write_text("main_config = dict(policy=dict(multi_agent=True))\n"
                                                "create_config = dict(policy=dict(type='sac'))\n")
    res = cli("port", "--walk", "dizoo")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[0] == "2 configs: 1 ported, compiles, 1 refused."
    assert ("| `classic_control/cartpole/config/cartpole_impala_config.py` | ported, compiles | CartPole-v1; "
            "stop_value 195 -> 475 |") in res.stdout
    assert "| `classic_control/cartpole/config/cartpole_ma_config.py` | refused | multi-agent |" in res.stdout
    assert cli("port", "x.py", "--walk", "dizoo").exit_code == 2

"""The ``ding_lite`` command line: user errors (exit 2, one line, no traceback, nothing written), seeds and names,
never overwriting a run, -m eval, the user-policy example, and the real process (exit codes, Ctrl-C)."""
import math
import os
import signal
import subprocess
import sys
import time

import pytest

from entry_helpers import (CARTPOLE, MY_IMPALA, REPO, SMALL, assert_user_error, load_ckpt, read_result, run_dirs,
                           snapshot)

from ding_lite.config import read_config_file


# ---- user errors ----------------------------------------------------------------------------------------------------
USER_ERRORS = {
    "misspelt key": (["--set", "policy.learn.learning_rat=0.1"],
                     ["policy.learn.learning_rat", "did you mean policy.learn.learning_rate"]),
    "misspelt section": (["--set", "policy.lern.batch_size=64"], ["policy.lern", "did you mean policy.learn"]),
    "wrong type (quoted)": (["--set", "policy.learn.batch_size='x'"], ["policy.learn.batch_size", "expected int"]),
    "wrong type (bare word)": (["--set", "policy.learn.batch_size=x"], ["policy.learn.batch_size", "expected int"]),
    "impossible value": (["--set", "policy.learn.batch_size=-1"], ["policy.learn.batch_size=-1"]),
    "unknown policy type": (["--set", "policy.type=impalaa"], ["impalaa", "did you mean impala", "registered:"]),
    "unknown gymnasium id": (["--set", "env.env_id=CartPol-v1"], ["env.env_id", "CartPol-v1", "CartPole-v1"]),
    "model shape vs env (found at build)": (["--set", "policy.model.obs_shape=5"], ["policy.model.obs_shape=5"]),
    "action space vs env (found at build)": (["--set", "policy.action_space=continuous"],
                                             ["policy.action_space", "discrete"]),
    "eval quota": (["--set", "env.n_evaluator_episode=3", "--set", "env.evaluator_env_num=2"],
                   ["env.n_evaluator_episode=3", "env.evaluator_env_num=2"]),
    "--set without =": (["--set", "policy.learn.batch_size"], ["policy.learn.batch_size", "KEY=VALUE"]),
    "--set with empty key part": (["--set", "policy..batch_size=3"], ["policy..batch_size"]),
    "infinite learning rate": (["--set", "policy.learn.learning_rate=inf"],
                               ["policy.learn.learning_rate=inf: must be a finite number (from --set)"]),
    "NaN learning rate": (["--set", "policy.learn.learning_rate=nan"],
                          ["policy.learn.learning_rate=nan: must be a finite number (from --set)"]),
    "NaN entropy weight": (["--set", "policy.learn.entropy_weight=NaN"],
                           ["policy.learn.entropy_weight=nan: must be a finite number (from --set)"]),
    "NaN inside a list": (["--set", "policy.model.encoder_hidden_size_list=[64, nan]"],
                          ["policy.model.encoder_hidden_size_list[1]=nan: must be a finite number (from --set)"]),
    "inf where None means unset": (["--set", "env.stop_value=inf"],
                                   ["env.stop_value=inf: must be a finite number, or None to leave it unset"]),
    "--set KEY VALUE (a space, not '=')": (["--set", "policy.learn.batch_size", "32"],
                                           ["--set policy.learn.batch_size 32: write --set KEY=VALUE as one word",
                                            "(--set policy.learn.batch_size=32)"]),
    "a stray word": (["sumary"], ["unexpected argument 'sumary'", "plot, port, summary"]),
}


@pytest.mark.parametrize("args, fragments", list(USER_ERRORS.values()), ids=list(USER_ERRORS))
def test_user_error(cli, in_tmp, args, fragments):
    res = cli("-m", "serial", "-c", CARTPOLE, "--env-step", 1500, *SMALL, *args)
    line = assert_user_error(res, *fragments)
    assert res.stdout == ""
    assert os.listdir(in_tmp) == [], "a failed run must not create its run directory"
    if "registered:" in fragments:
        assert "impala" in line.split("registered:", 1)[1]


def test_user_error_config_files(cli, in_tmp):
    assert_user_error(cli("-c", "no_such_config.py"), "no_such_config.py", "not found")

    (in_tmp / "no_main.py").write_text("cartpole_config = dict(env=dict(env_id='CartPole-v1'))\n")
    assert_user_error(cli("-c", "no_main.py"), "no_main.py", "main_config")

    (in_tmp / "bad_type.py").write_text("main_config = dict(exp_name='x')\n"
                                        "create_config = dict(env=dict(type='gym'), policy=dict(type='impalla'))\n")
    line = assert_user_error(cli("-c", "bad_type.py", "--env-step", 1500), "impalla", "registered:")
    assert "impala" in line.split("registered:", 1)[1]

    (in_tmp / "raises.py").write_text("x = 1\nmain_config = dict(exp_name=1 / 0)\n")
    assert_user_error(cli("-c", "raises.py"), "raises.py:2", "ZeroDivisionError")

    assert sorted(os.listdir(in_tmp)) == ["bad_type.py", "no_main.py", "raises.py"]


@pytest.mark.slow
def test_user_error_in_a_real_process(tmp_path):
    """The installed entry point's behaviour: exit status 2, one line on stderr, no traceback, nothing written."""
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "ding_lite.cli", "-m", "serial", "-c", CARTPOLE,
                           "--set", "policy.learn.learning_rat=0.1"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ding_lite: error: "), proc.stderr
    assert "did you mean policy.learn.learning_rate" in lines[0]
    assert os.listdir(tmp_path) == []


def test_help_imports_neither_torch_nor_gymnasium():
    """``ding_lite --help`` answers at once: the CLI module loads click and the standard library only (torch took
    seconds)."""
    code = ("import sys\nfrom ding_lite.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n"
            "    pass\nprint(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'gymnasium', 'numpy'}))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Usage: " in proc.stdout and "summary" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_closing_line_rounds_the_returns(cli, in_tmp):
    """The last line of a run gives its returns with two decimals, as the eval lines do, not as raw floats."""
    res = cli.train("-s", "0", "--set", "env.env_id=Pendulum-v1", env_step=256)  # returns like -1180.7912...
    assert res.exit_code == 0, res.output
    with open(os.path.join("cartpole_impala_seed0", "log", "train.log")) as f:
        closing = f.read().strip().splitlines()[-1]
    result = read_result("cartpole_impala_seed0")
    assert (f"final return {result['final_return']:.2f}, best {result['best_return']:.2f}, "
            f"{result['wall_time']:.1f} s") in closing, closing


@pytest.mark.slow
def test_ctrl_c_in_a_real_process(tmp_path):
    """SIGINT to a training process: exit 130, a last checkpoint and result.json with stop_reason 'interrupted'."""
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "ding_lite.cli", "-c", CARTPOLE, "-q",
                             "--env-step", "100000000", *SMALL],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run = tmp_path / "cartpole_impala_seed0"
    try:
        deadline = time.time() + 60
        while not (run / "eval.csv").exists():  # the training loop has started
            assert proc.poll() is None, proc.communicate()
            assert time.time() < deadline, "the run did not start within 60 s"
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    result = read_result(run)
    assert result["stop_reason"] == "interrupted"
    last = load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")
    assert last["counters"]["env_step"] == result["env_step"]
    assert sorted(os.listdir(run / "ckpt")) == ["ckpt_best.pth.tar", "ckpt_last.pth.tar"]


# ---- never overwrite a run; --resume needs ckpt_last ----------------------------------------------------------------
def test_second_run_without_resume_is_refused(cli, in_tmp):
    assert cli.train().exit_code == 0
    run = in_tmp / "cartpole_impala_seed0"
    before = snapshot(run)
    line = assert_user_error(cli.train(), "cartpole_impala_seed0", "--resume")
    assert "already exists" in line
    assert snapshot(run) == before
    assert run_dirs(in_tmp) == ["cartpole_impala_seed0"]


def test_resume_without_a_run(cli, in_tmp):
    assert_user_error(cli.train("--resume", "--exp-name", "never_ran"), "never_ran_seed0", "not found", "--resume")
    assert os.listdir(in_tmp) == []


def test_a_crashed_run_keeps_its_checkpoint_and_resumes(cli, in_tmp, monkeypatch):
    from ding_lite.worker.learner import Learner

    def crash(self, batch):
        raise RuntimeError("simulated crash")

    with monkeypatch.context() as mp:
        mp.setattr(Learner, "train", crash)
        with pytest.raises(RuntimeError, match="simulated crash"):
            cli.train()
    run = in_tmp / "cartpole_impala_seed0"
    assert (run / "ckpt" / "ckpt_last.pth.tar").exists()
    assert read_result(run)["stop_reason"] == "error: RuntimeError"
    assert cli.train("--resume").exit_code == 0
    assert read_result(run)["stop_reason"] == "max_env_step"


def test_resume_of_a_run_without_checkpoint_gives_a_way_out(cli, in_tmp):
    (in_tmp / "cartpole_impala_seed0" / "ckpt").mkdir(parents=True)  # a run killed before it wrote anything
    line = assert_user_error(cli.train("--resume"), "no checkpoint", "cartpole_impala_seed0")
    # the advice must work: the directory exists, so starting again needs --exp-name or removing it
    assert "Run without --resume" not in line
    assert "--exp-name" in line or "remove" in line.lower() or "delete" in line.lower()


# ---- seeds and names ------------------------------------------------------------------------------------------------
def test_several_seeds_and_exp_name(cli, in_tmp):
    assert cli.train("-s", 0, "-s", 1).exit_code == 0
    assert run_dirs(in_tmp) == ["cartpole_impala_seed0", "cartpole_impala_seed1"]
    for seed in (0, 1):
        main, _ = read_config_file(str(in_tmp / f"cartpole_impala_seed{seed}" / "total_config.py"))
        assert main["seed"] == seed and main["exp_name"] == "cartpole_impala"
        assert read_result(in_tmp / f"cartpole_impala_seed{seed}")["stop_reason"] == "max_env_step"
    # inf is a valid --set value where the default is inf (the buffer's max_use, under IMPALA's 16)
    assert cli.train("--exp-name", "foo", "--set", "policy.other.replay_buffer.max_use=inf").exit_code == 0
    assert run_dirs(in_tmp) == ["cartpole_impala_seed0", "cartpole_impala_seed1", "foo_seed0"]
    main, _ = read_config_file(str(in_tmp / "foo_seed0" / "total_config.py"))
    assert main["exp_name"] == "foo" and main["policy"]["other"]["replay_buffer"]["max_use"] == math.inf


# ---- -m eval --------------------------------------------------------------------------------------------------------
def test_eval_mode(cli, in_tmp):
    assert cli.train().exit_code == 0
    ckpt = in_tmp / "cartpole_impala_seed0" / "ckpt" / "ckpt_best.pth.tar"
    before = snapshot(in_tmp)
    res = cli("-m", "eval", "-c", CARTPOLE, "--load-path", ckpt, *SMALL)
    assert res.exit_code == 0, res.output
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("seed 0: return "), res.stdout
    assert "over 1 episodes" in lines[0]
    counters = load_ckpt(ckpt)["counters"]
    assert f"train_iter {counters['train_iter']}" in lines[0]

    res = cli("-m", "eval", "-c", CARTPOLE, "--load-path", ckpt, "--episodes", 3, *SMALL)
    assert res.exit_code == 0 and "over 3 episodes" in res.stdout

    assert_user_error(cli("-m", "eval", "-c", CARTPOLE, "--load-path", "missing/ckpt_best.pth.tar", *SMALL),
                      "missing/ckpt_best.pth.tar", "not found")
    assert_user_error(cli("-m", "eval", "-c", CARTPOLE, *SMALL), "--load-path")
    res = cli("-m", "eval", "-c", CARTPOLE, "--load-path", ckpt, *SMALL,
              "--set", "policy.model.encoder_hidden_size_list=[32]")
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.stderr.startswith("ding_lite: error: ") and "saved with another model" in res.stderr
    assert "policy.model.encoder_hidden_size_list: checkpoint [64, 64], config [32]" in res.stderr
    (in_tmp / "junk.pth.tar").write_bytes(b"not a checkpoint")
    res = cli("-m", "eval", "-c", CARTPOLE, "--load-path", "junk.pth.tar", *SMALL)
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.stderr.startswith("ding_lite: error: checkpoint 'junk.pth.tar' cannot be read")
    assert_user_error(cli("-m", "serial", "-c", CARTPOLE, "--load-path", ckpt, *SMALL), "--resume")
    os.remove(in_tmp / "junk.pth.tar")
    assert snapshot(in_tmp) == before, "-m eval must not write anything"


CKPT_ERRORS = {
    "another model": pytest.param(
        ["--set", "policy.model.encoder_hidden_size_list=[32]"], None,
        ["ckpt_best.pth.tar", "saved with another model", "policy.model.encoder_hidden_size_list"]),
    "not a checkpoint": pytest.param(
        [], b"not a checkpoint", ["junk.pth.tar", "cannot be read"]),
}


@pytest.mark.parametrize("args, junk, fragments", list(CKPT_ERRORS.values()), ids=list(CKPT_ERRORS))
def test_eval_checkpoint_errors_are_one_line(cli, in_tmp, args, junk, fragments):
    if junk is None:
        assert cli.train().exit_code == 0
        ckpt = in_tmp / "cartpole_impala_seed0" / "ckpt" / "ckpt_best.pth.tar"
    else:
        ckpt = in_tmp / "junk.pth.tar"
        ckpt.write_bytes(junk)
    res = cli("-m", "eval", "-c", CARTPOLE, "--load-path", ckpt, *SMALL, *args)
    assert_user_error(res, *fragments)


def test_ctrl_c_in_eval_mode_does_not_claim_a_checkpoint(cli, in_tmp, monkeypatch):
    assert cli.train().exit_code == 0
    ckpt = in_tmp / "cartpole_impala_seed0" / "ckpt" / "ckpt_best.pth.tar"
    from ding_lite.worker.evaluator import Evaluator

    def interrupted(self, train_iter):
        raise KeyboardInterrupt

    monkeypatch.setattr(Evaluator, "eval", interrupted)
    res = cli("-m", "eval", "-c", CARTPOLE, "--load-path", ckpt, *SMALL)
    assert res.exit_code == 130
    assert "interrupted" in res.stderr
    assert "written" not in res.stderr, res.stderr


# ---- the user-policy example ----------------------------------------------------------------------------------------
def test_user_policy_example(cli, in_tmp):
    res = cli.train(config=MY_IMPALA)
    assert res.exit_code == 0, res.output
    run = in_tmp / "cartpole_my_impala_seed0"
    assert read_result(run)["stop_reason"] == "max_env_step"
    main, create = read_config_file(str(run / "total_config.py"))
    assert create["policy"]["type"] == "my_impala"
    assert main["policy"]["reward_clip"] == 1.0
    text = (run / "total_config.py").read_text()
    assert "my_impala" in text

    line = assert_user_error(cli.train("--exp-name", "bad", "--set", "policy.reward_clip=-1", config=MY_IMPALA),
                             "policy.reward_clip")
    assert "must be positive" in line
    assert_user_error(cli.train("--exp-name", "bad", "--set", "policy.reward_clp=1", config=MY_IMPALA),
                      "policy.reward_clp", "did you mean policy.reward_clip")
    assert run_dirs(in_tmp) == ["cartpole_my_impala_seed0"]


def test_several_config_problems_in_one_run(cli, in_tmp):
    res = cli.train("--set", "policy.learn.learning_rat=0.1", "--set", "policy.learn.batch_size=-1",
                    "--set", "policy.learn.entropy_weight=nan")
    assert res.exit_code == 2 and "Traceback" not in res.output and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert lines[0] == "ding_lite: error: 3 problems in the config; fix them all, then run again:"
    assert [line.split(":")[0].split("=")[0].strip() for line in lines[1:]] == [
        "policy.learn.batch_size", "policy.learn.entropy_weight", "policy.learn.learning_rat"]
    assert os.listdir(in_tmp) == []

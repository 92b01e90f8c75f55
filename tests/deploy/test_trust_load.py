"""Loading a run someone else made runs none of its code (issue 44, item 1): ``ding_lite.load``, ``ding_lite export``
and ``-m eval --load-path`` without ``-c`` read total_config.py as literals and import the modules it names only
with ``trust_config=True`` / ``--trust-config``; a checkpoint's run directory is its grandparent only under ``ckpt/``."""
import os
import shutil
import sys

import numpy as np
import pytest

import ding_lite
from ding_lite.config import read_config_file
from ding_lite.entry import serial_pipeline
from ding_lite.utils import UserError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = {"env.collector_env_num": 2, "env.evaluator_env_num": 1, "env.n_evaluator_episode": 1, "torch_threads": 1,
         "env.stop_value": None}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trust")
    config = read_config_file(os.path.join(REPO, "dizoo_configs", "cartpole_impala.py"))
    serial_pipeline(config, seed=0, max_env_step=300, quiet=True, exp_name=str(tmp / "cartpole"), overrides=SMALL)
    return tmp / "cartpole_seed0"


def shared_copy(run, tmp_path, first_line=None, replace=None):
    """A copy of the run, as downloaded, with its total_config.py changed."""
    copy = tmp_path / "shared_run"
    shutil.copytree(run, copy)
    path = copy / "total_config.py"
    text = path.read_text()
    if replace:
        assert replace[0] in text
        text = text.replace(replace[0], replace[1], 1)
    if first_line:
        text = first_line + "\n" + text
    path.write_text(text)
    return copy


def test_load_of_a_shared_run_does_not_run_its_total_config(run, tmp_path):
    marker = tmp_path / "PWNED"
    shared = shared_copy(run, tmp_path, first_line=f"open({str(marker)!r}, 'w').write('ran')")
    with pytest.raises(UserError) as info:
        ding_lite.load(str(shared))
    message = str(info.value)
    assert message.startswith(f"{shared / 'total_config.py'}:1: the statement open(") and "trust_config=True" in message
    assert not marker.exists()
    agent = ding_lite.load(str(shared), trust_config=True)  # the user's explicit choice: the file runs
    assert marker.exists() and agent.predict(np.zeros(4, np.float32)) in (0, 1)


def test_export_and_eval_without_c_refuse_it_too_and_say_trust_config(run, tmp_path, cli):
    marker = tmp_path / "PWNED"
    shared = shared_copy(run, tmp_path, first_line=f"open({str(marker)!r}, 'w').write('ran')")
    for args in (["export", shared, "--format", "torchscript"],
                 ["-m", "eval", "--load-path", shared / "ckpt" / "ckpt_best.pth.tar", "--episodes", "1"]):
        res = cli(*args)
        assert res.exit_code == 2, res.output
        assert "total_config.py:1: the statement open(" in res.output and "--trust-config" in res.output, res.output
        assert not marker.exists()
    assert not (shared / "ckpt_best.pt").exists()
    res = cli("-m", "eval", "--load-path", shared / "ckpt" / "ckpt_best.pth.tar", "--episodes", "1", "--trust-config")
    assert res.exit_code == 0 and "over 1 episodes" in res.output, res.output
    assert marker.exists()


def test_eval_without_c_uses_the_runs_own_config(run, cli):
    res = cli("-m", "eval", "--load-path", run, "--episodes", "1")
    assert res.exit_code == 0 and "seed 0: return" in res.output, res.output


@pytest.mark.parametrize("where", ["import_names", "wrapper", "env_id"])
def test_modules_the_run_names_are_imported_only_with_the_switch(run, tmp_path, monkeypatch, where):
    """A module on sys.path that the shared config names (it would run on import): refused, listed with where it is
    named; imported with trust_config=True."""
    module = f"trust_probe_{where}"
    marker = tmp_path / "IMPORTED"
    (tmp_path / f"{module}.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n"
                                           f"import gymnasium\nclass W(gymnasium.Wrapper):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    edit = {"import_names": ("env=dict(type='gym', import_names=[])", f"env=dict(type='gym', import_names=['{module}'])"),
            "wrapper": ("wrappers=[]", f"wrappers=['{module}:W']"),
            "env_id": ("env_id='CartPole-v1'", f"env_id='{module}:CartPole-v1'")}[where]
    shared = shared_copy(run, tmp_path, replace=edit)
    with pytest.raises(UserError) as info:
        ding_lite.load(str(shared))
    named = {"import_names": "create_config.env.import_names", "wrapper": "env.wrappers[0]",
             "env_id": "env.env_id"}[where]
    assert f"'{module}' ({named})" in str(info.value) and "trust_config=True" in str(info.value), str(info.value)
    assert not marker.exists() and module not in sys.modules
    ding_lite.load(str(shared), trust_config=True)
    assert marker.exists()


def test_a_checkpoint_outside_ckpt_is_read_with_the_config_beside_it(run, tmp_path):
    """Only a checkpoint under ckpt/ takes its grandparent's total_config.py; elsewhere the one beside it (a stray
    grandparent config is never picked up)."""
    outer = tmp_path / "outer"
    (outer / "inner").mkdir(parents=True)
    shutil.copy(run / "total_config.py", outer / "total_config.py")  # a grandparent that is not the run
    ckpt = outer / "inner" / "policy.pth.tar"
    shutil.copy(run / "ckpt" / "ckpt_best.pth.tar", ckpt)
    with pytest.raises(UserError, match="no total_config.py beside it .* is missing") as info:
        ding_lite.load(str(ckpt))
    assert str(outer / "inner" / "total_config.py") in str(info.value)
    shutil.copy(run / "total_config.py", outer / "inner" / "total_config.py")
    agent = ding_lite.load(str(ckpt))
    assert agent.run_dir == str(outer / "inner") and agent.checkpoint_name == "policy"


# ---- issue 72, item 1: what a foreign config may call --------------------------------------------------------------
FILE_WRITER = "ding_lite.utils.file_io:atomic_write_text"  # called as Name(env, **kwargs): writes str(env) to path


@pytest.mark.parametrize("wrappers", [
    f"[dict(type='{FILE_WRITER}', kwargs=dict(path=VICTIM))]",
    f"['{FILE_WRITER}']",
    # nested in an allowed wrapper's kwargs: checked too
    f"[dict(type='gymnasium.wrappers:ClipReward', kwargs=dict(min_reward=dict(type='{FILE_WRITER}')))]",
    "[dict(type='gymnasium.wrappers:RecordVideo', kwargs=dict(video_folder=VICTIM))]",
])
def test_a_foreign_config_may_call_only_allow_listed_wrappers(run, tmp_path, cli, wrappers):
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n")
    shared = shared_copy(run, tmp_path, replace=("wrappers=[],", f"wrappers={wrappers.replace('VICTIM', repr(str(victim)))},"))
    with pytest.raises(UserError, match="names callables that would be called with the env") as info:
        ding_lite.load(str(shared))
    assert "trust_config=True" in str(info.value) and "env.wrappers[0]" in str(info.value)
    for args in (["export", shared, "--format", "torchscript"],
                 ["-m", "eval", "--load-path", shared / "ckpt" / "ckpt_best.pth.tar", "--episodes", "1"]):
        res = cli(*args)
        assert res.exit_code == 2 and "names callables that would be called with the env" in res.output, res.output
    assert victim.read_text() == "the user's file\n"


def test_an_allow_listed_wrapper_loads(run, tmp_path):
    shared = shared_copy(run, tmp_path, replace=(
        "wrappers=[],", "wrappers=[dict(type='gymnasium.wrappers:ClipReward', kwargs=dict(min_reward=-1.0))],"))
    assert ding_lite.load(str(shared)).predict(np.zeros(4, np.float32)) in (0, 1)


def test_nothing_is_imported_from_the_run_or_working_directory_while_loading(run, tmp_path, monkeypatch):
    """``python -c`` puts '' (the working directory) first on sys.path: a module planted in a run directory the user
    cd-s into ran at the first import of a name no installed package provides. Off sys.path during load."""
    shared = shared_copy(run, tmp_path)
    seen = []
    real = ding_lite.deploy.agent.run_config
    monkeypatch.setattr(ding_lite.deploy.agent, "run_config", lambda *a: seen.append(list(sys.path)) or real(*a))
    monkeypatch.chdir(shared)
    monkeypatch.setattr(sys, "path", ["", str(shared), *sys.path])
    ding_lite.load(".")
    assert seen and "" not in seen[0] and str(shared) not in seen[0]
    assert sys.path[:2] == ["", str(shared)]  # put back afterwards
    ding_lite.load(".", trust_config=True)  # the user's explicit choice: their path as it is
    assert "" in seen[1]


def test_eval_without_c_does_not_put_the_working_directory_on_sys_path(run, tmp_path, cli, monkeypatch):
    import ding_lite.entry.eval as eval_module
    seen = []
    real = eval_module.eval_pipeline
    monkeypatch.setattr(eval_module, "eval_pipeline", lambda *a, **k: seen.append(list(sys.path)) or real(*a, **k))
    monkeypatch.chdir(run)
    res = cli("-m", "eval", "--load-path", run / "ckpt" / "ckpt_best.pth.tar", "--episodes", "1")
    assert res.exit_code == 0, res.output
    assert seen and os.getcwd() not in seen[0] and str(run) not in seen[0]

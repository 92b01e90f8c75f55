"""``ding_lite tune``'s search space and options: specs parsed (never evaluated), paths checked against the compiled
config with the did-you-mean of ``--set``, and every mistake one line on stderr (exit 2) before any trial runs."""
import os

import pytest

from entry_helpers import CARTPOLE, assert_user_error

from ding_lite.config import read_config_file
from ding_lite.tune import Param, check_space, parse_params, parse_spec
from ding_lite.utils import ConfigError, UserError

LR = "policy.learn.learning_rate"


def test_specs_parse():
    assert parse_spec(LR, "loguniform(1e-4, 1e-2)") == Param(LR, "loguniform", (1e-4, 1e-2))
    assert parse_spec(LR, " uniform(0, 1) ") == Param(LR, "uniform", (0.0, 1.0))
    assert parse_spec("policy.learn.batch_size", "int(16,128)") == Param("policy.learn.batch_size", "int", (16, 128))
    assert parse_spec("x.y", "choice([32, 'a', [1, 2]])").args == (32, "a", [1, 2])
    space = parse_params([f"{LR}=uniform(0.1, 0.2)"], {LR: "loguniform(1e-4, 1e-2)", "policy.learn.batch_size":
                                                       "choice([16, 32])"})
    assert [str(p) for p in space] == [f"{LR}=uniform(0.1, 0.2)", "policy.learn.batch_size=choice([16, 32])"]


BAD_SPECS = {
    "no call": ("1e-3", "expected KIND(ARGS)"),
    "unknown kind": ("normal(0, 1)", "unknown kind 'normal'"),
    "code, not literals": ("uniform(__import__('os').getpid(), 2)", "must be literals"),
    "name": ("uniform(a, b)", "must be literals"),
    "one bound": ("uniform(1)", "two finite numbers"),
    "reversed": ("uniform(2, 1)", "must be below high"),
    "log of zero": ("loguniform(0, 1)", "0 < low"),
    "int of floats": ("int(1.5, 3)", "two whole numbers"),
    "empty choice": ("choice([])", "one non-empty list"),
    "choice of a number": ("choice(3)", "one non-empty list"),
    "infinite": ("uniform(0, inf)", "must be literals"),
}


@pytest.mark.parametrize("name", list(BAD_SPECS))
def test_bad_specs_are_one_line(name):
    spec, fragment = BAD_SPECS[name]
    with pytest.raises(UserError) as err:
        parse_spec(LR, spec)
    assert fragment in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith(f"--param {LR}={spec}")


def test_paths_are_checked_against_the_compiled_config():
    config = read_config_file(CARTPOLE)
    check_space(config, parse_params([f"{LR}=loguniform(1e-4,1e-2)", "policy.learn.batch_size=choice([16, 64])"]))
    with pytest.raises(ConfigError, match="did you mean policy.learn.learning_rate"):
        check_space(config, parse_params(["policy.learn.learning_rat=loguniform(1e-4,1e-2)"]))
    with pytest.raises(ConfigError, match="policy.learn.batch_size.*expected int"):
        check_space(config, parse_params(["policy.learn.batch_size=uniform(16, 64)"]))
    with pytest.raises(ConfigError, match=r"policy.learn.batch_size=-1"):  # a range the config refuses
        check_space(config, parse_params(["policy.learn.batch_size=int(-1, 64)"]))


CLI_ERRORS = {
    "misspelt path": (["--param", "policy.learn.learning_rat=loguniform(1e-4,1e-2)"],
                      ["policy.learn.learning_rat", "did you mean policy.learn.learning_rate?"]),
    "bad space": (["--param", f"{LR}=loguniform(-1, 1)"], ["0 < low"]),
    "no space": ([], ["no search space"]),
    "param without =": (["--param", LR], ["expected PATH=SPEC"]),
    "bad seeds": (["--param", f"{LR}=uniform(0.1, 0.2)", "--seeds", "0,x"], ["--seeds"]),
    "too many jobs": (["--param", f"{LR}=uniform(0.1, 0.2)", "--jobs", str((os.cpu_count() or 1) + 1)],
                      ["cores"]),
}


@pytest.mark.parametrize("name", list(CLI_ERRORS))
def test_cli_errors_are_one_line_and_write_nothing(name, cli, in_tmp):
    pytest.importorskip("optuna")
    args, fragments = CLI_ERRORS[name]
    result = cli("tune", "-c", CARTPOLE, "--study", "s", *args)
    assert_user_error(result, *fragments)
    assert not os.path.exists("s")


def test_a_bad_metric_is_one_line(cli, in_tmp):
    result = cli("tune", "-c", CARTPOLE, "--param", f"{LR}=uniform(0.1, 0.2)", "--metric", "median")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "Invalid value for '--metric'" in result.output and "'final', 'best', 'auc'" in result.output


def test_c_before_the_command_says_where_it_goes(cli, in_tmp):
    result = cli("-c", CARTPOLE, "tune", "--param", f"{LR}=uniform(0.1, 0.2)")
    assert result.exit_code == 2 and "write -c after the command: ding_lite tune -c CONFIG" in result.output

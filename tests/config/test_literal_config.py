"""Reading a run's total_config.py as literals, never running it (issue 44, item 1)."""
import os

import pytest

from ding_lite.config import compile_config, read_config_file
from ding_lite.config.literal import foreign_modules, named_modules, parse_literal_config, read_run_config
from ding_lite.config.save import config_source
from ding_lite.utils import UserError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = sorted(n for n in os.listdir(os.path.join(REPO, "dizoo_configs")) if n.endswith(".py"))


@pytest.mark.parametrize("name", CONFIGS)
def test_what_ding_lite_writes_reads_back_as_literals(tmp_path, name):
    """Every shipped config, compiled and written as total_config.py (inf included: max_staleness), reads back
    with the literal reader exactly as running the file gives it."""
    path = tmp_path / "total_config.py"
    path.write_text(config_source(compile_config(read_config_file(os.path.join(REPO, "dizoo_configs", name)))))
    assert parse_literal_config(str(path)) == tuple(dict(d) for d in read_config_file(str(path)))


def test_inf_nan_negative_numbers_tuples_and_non_identifier_keys(tmp_path):
    path = tmp_path / "total_config.py"
    path.write_text('"""doc"""\nmain_config = dict(a=float(\'inf\'), b=float(\'-inf\'), c=-3, d=(1, 2.5), '
                    'e={1: None, \'x-y\': [True, \'s\']}, f=float(\'nan\'))\ncreate_config = dict()\n')
    main, create = parse_literal_config(str(path))
    assert main["a"] == float("inf") and main["b"] == float("-inf") and main["f"] != main["f"]
    assert main["c"] == -3 and main["d"] == (1, 2.5) and main["e"] == {1: None, "x-y": [True, "s"]}
    assert create == {}


@pytest.mark.parametrize("source, line, construct", [
    ("import os\nmain_config = dict()\n", 1, "the statement import os"),
    ("main_config = dict()\nopen('/tmp/x', 'w')\n", 2, "the statement open('/tmp/x', 'w')"),
    ("main_config = dict(a=__import__('os').system('true'))\n", 1, "the call __import__('os').system('true')"),
    ("main_config = dict(a=os.environ)\n", 1, "the attribute os.environ"),
    ("main_config = dict(a=HOME)\n", 1, "the name HOME"),
    ("main_config = dict(a=1 + 2)\n", 1, "the expression 1 + 2"),
    ("main_config = dict(**other)\n", 1, "the call dict(**other)"),
    ("main_config = dict(a=float('1e300'))\n", 1, "the call float('1e300')"),
    ("x = 1\nmain_config = dict()\n", 1, "the statement x = 1"),
    ("main_config = dict()\n\n\ndef f():\n    pass\n", 4, "the statement def f():"),
    ("main_config = dict(a=[i for i in range(3)])\n", 1, "the expression [i for i in range(3)]"),
], ids=["import", "call statement", "dunder import", "attribute", "name", "operator", "unpacking", "float text",
        "other assignment", "function", "comprehension"])
def test_anything_but_literals_is_refused_naming_file_line_construct_and_switch(tmp_path, source, line, construct):
    path = tmp_path / "total_config.py"
    path.write_text(source)
    with pytest.raises(UserError) as info:
        read_run_config(str(path))
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: {construct}") and "\n" not in message, message
    assert "trust_config=True" in message and "--trust-config" in message


def test_the_modules_a_config_names_are_listed_outside_ding_lite_and_gymnasium():
    main = {"env": {"env_id": "probe_pkg:Probe-v0", "import_names": ["ding_lite.envs"],
                    "wrappers": ["probe_wrap:W", {"type": "gymnasium.wrappers:ClipReward"},
                                 "ding_lite.envs.toy.masked_cartpole:HideVelocity"]}}
    create = {"policy": {"type": "impala", "import_names": ["probe_policy"]}}
    assert ("probe_policy", "create_config.policy.import_names") in named_modules(main, create)
    assert foreign_modules(main, create) == [("probe_policy", "create_config.policy.import_names"),
                                             ("probe_wrap", "env.wrappers[0]"), ("probe_pkg", "env.env_id")]
    assert foreign_modules(main, create, allowed=["probe_pkg", "probe_wrap", "probe_policy"]) == []

"""The shipped CartPole IMPALA, APPO and ACER configs learn: evaluation mean >= 475 within 150k env steps, seeds 0, 1, 2."""
import json
import os

import pytest

from ding_lite.config import read_config_file
from ding_lite.entry import serial_pipeline

CONFIGS = os.path.join(os.path.dirname(__file__), "..", "..", "dizoo_configs")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cartpole_impala", "cartpole_appo", "cartpole_acer"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cartpole_reaches_475(name, seed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main_config, create_config = read_config_file(os.path.join(CONFIGS, f"{name}.py"))
    assert main_config["env"]["stop_value"] >= 475
    serial_pipeline((main_config, create_config), seed=seed, max_env_step=150_000, quiet=True)
    with open(tmp_path / f"{name}_seed{seed}" / "result.json") as f:
        result = json.load(f)
    assert result["stop_reason"] == "stop_value", result
    assert result["best_return"] >= 475 and result["env_step"] <= 150_000

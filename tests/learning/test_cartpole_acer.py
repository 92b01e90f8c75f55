"""The shipped CartPole ACER config learns: evaluation mean >= 475 within 150k env steps for seeds 0, 1 and 2."""
import json
import os

import pytest

from ding_lite.config import read_config_file
from ding_lite.entry import serial_pipeline

CONFIG = os.path.join(os.path.dirname(__file__), "..", "..", "dizoo_configs", "cartpole_acer.py")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cartpole_acer_reaches_475(seed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main_config, create_config = read_config_file(CONFIG)
    assert main_config["env"]["stop_value"] >= 475
    serial_pipeline((main_config, create_config), seed=seed, max_env_step=150_000, quiet=True)
    with open(tmp_path / f"cartpole_acer_seed{seed}" / "result.json") as f:
        result = json.load(f)
    assert result["stop_reason"] == "stop_value", result
    assert result["best_return"] >= 475 and result["env_step"] <= 150_000

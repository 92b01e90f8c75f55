"""The clean stop ``ding_lite tune`` prunes with: a ``stop_request`` file in a run directory stops the run between
updates, as any stop does (ckpt_last written whole, result.json with the file's first word as its stop reason)."""
import os
import threading
import time

import torch

from entry_helpers import CARTPOLE, SMALL_DICT, read_result

from ding_lite.config import read_config_file
from ding_lite.entry.serial import serial_pipeline
from ding_lite.run.run_dir import STOP_REQUEST, stop_request
from ding_lite.tune.trial import STOP_REQUEST as TUNE_STOP_REQUEST


def test_a_stop_request_file_stops_a_run_cleanly(in_tmp):
    assert TUNE_STOP_REQUEST == STOP_REQUEST  # tune writes the file the training loop reads (it cannot import entry)
    run_dir = "stopped_seed0"

    def ask_to_stop() -> None:  # once the first evaluation is written, as the pruner would
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(run_dir, "eval.csv")) and time.monotonic() < deadline:
            time.sleep(0.01)
        with open(os.path.join(run_dir, STOP_REQUEST), "w") as f:
            f.write("pruned\n")

    asker = threading.Thread(target=ask_to_stop)
    asker.start()
    serial_pipeline(read_config_file(CARTPOLE), 0, max_env_step=50_000, quiet=True, exp_name="stopped",
                    overrides={**SMALL_DICT, "env.stop_value": None})
    asker.join()
    result = read_result(run_dir)
    assert result["stop_reason"] == "pruned" and result["env_step"] < 50_000
    state = torch.load(os.path.join(run_dir, "ckpt", "ckpt_last.pth.tar"), weights_only=False)
    assert state["counters"]["env_step"] == result["env_step"]


def test_the_stop_reason_is_the_first_word(tmp_path):
    assert stop_request(str(tmp_path)) is None
    (tmp_path / STOP_REQUEST).write_text("")
    assert stop_request(str(tmp_path)) == "stop_request"
    (tmp_path / STOP_REQUEST).write_text("pruned by the median rule\n")
    assert stop_request(str(tmp_path)) == "pruned"

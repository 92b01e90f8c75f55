"""The progress line: one live line (tqdm) on a terminal; plain lines, as in train.log, everywhere else."""
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios

import pytest

from entry_helpers import CARTPOLE, REPO, SMALL

PROGRESS = "| train_iter "  # a plain progress line: "env_step 1,024 | train_iter 10 | ..."


def _run_in_terminal(cwd, *args: str) -> str:
    """The CLI's output on a pseudo-terminal of 120 columns."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "ding_lite.cli", "-c", CARTPOLE, *SMALL, *args], cwd=cwd,
                            env=env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not data:
                break
            out += data
        elif proc.poll() is not None:
            break
    proc.wait(timeout=60)
    os.close(master)
    assert proc.returncode == 0, out.decode(errors="replace")[-2000:]
    return out.decode(errors="replace")


@pytest.mark.slow
def test_a_terminal_gets_one_live_line(tmp_path):
    out = _run_in_terminal(tmp_path, "--env-step", "3000", "--set", "policy.learn.learner.hook.log_show_after_iter=5",
                           "--set", "env.stop_value=None")
    lines = out.replace("\r\n", "\n").split("\n")
    assert not [line for line in lines if PROGRESS in line], "progress printed as separate lines on a terminal"
    bar = [part for part in out.split("\r") if "env steps/s" in part]
    assert len(bar) >= 3, out[-2000:]  # redrawn in place ("\r"), with the rate ...
    assert any("/3.00k" in part and "<" in part for part in bar), bar[-1]  # ... the budget and the ETA
    assert any("it/s" in part and "eval " in part for part in bar), bar[-1]  # ... train iters/s, the last eval
    assert "stopped (max_env_step)" in out  # other messages still print, above the bar
    log = (tmp_path / "cartpole_impala_seed0" / "log" / "train.log").read_text()
    assert log.count(PROGRESS) >= 5, "train.log keeps every progress line"


def test_not_a_terminal_gets_plain_lines(cli, in_tmp):
    res = cli("-c", CARTPOLE, *SMALL, "--env-step", 1500, "--set", "policy.learn.learner.hook.log_show_after_iter=5")
    assert res.exit_code == 0, res.output
    assert res.stdout.count(PROGRESS) >= 5 and "\r" not in res.stdout

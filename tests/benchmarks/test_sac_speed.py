"""benchmarks/sac_speed.py's rate: env steps/s from the difference of a short and a long run, and no rate (None, with
a line that says so) where noise made the longer run no slower."""
import os
import sys

BENCHMARKS = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "benchmarks")
sys.path.insert(0, os.path.abspath(BENCHMARKS))

import sac_speed  # noqa: E402


def test_the_rate_is_the_difference_of_the_two_runs():
    times = {300: (1.0, 0.9), 500: (2.0, 1.4)}  # (wall s, CPU s)
    out = sac_speed.rate(lambda n: times[n], 300, 500)
    assert out["env_steps_per_s"] == 200.0 and out["env_steps_per_cpu_s"] == 400.0


def test_a_longer_run_that_was_not_slower_gives_no_rate(capsys):
    times = {300: (2.18, 2.1), 500: (1.2, 1.2)}  # the first run paid one-off costs: a negative difference
    out = sac_speed.rate(lambda n: times[n], 300, 500)
    assert out["env_steps_per_s"] is None and out["env_steps_per_cpu_s"] is None
    assert "no rate from this pair; widen --steps" in capsys.readouterr().out
    median = sac_speed.median_rate([out, {**out, "env_steps_per_s": 150.0}, {**out, "env_steps_per_s": 90.0}])
    assert median["env_steps_per_s"] == 90.0 and median["repeats"] == [None, 150.0, 90.0]
    assert sac_speed.ratio(None, 2.0) is None and sac_speed.ratio(3.0, 2.0) == 1.5
    assert sac_speed.fmt(None, "11.1f") == "        n/a" and sac_speed.fmt(3.14, "11.1f") == "        3.1"

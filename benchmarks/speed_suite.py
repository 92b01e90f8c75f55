"""The benchmark suite in one command: every benchmark that docs/benchmarks.md reports, each writing
``benchmarks/results/<name>.json`` (its figures, the machine and the date).

    python benchmarks/speed_suite.py                   # the whole suite: about 45 minutes on an idle 2-core machine
    python benchmarks/speed_suite.py --quick           # every benchmark at a tiny budget (seconds each): checks that they
                                               # run; writes to a temporary directory, not benchmarks/results/
    python benchmarks/speed_suite.py --only buffer collector_throughput
    python benchmarks/speed_suite.py --results-dir /tmp/my_results

Each benchmark is a script of this directory, run in a process of its own (``python benchmarks/<name>.py``, which
also runs on its own with more options: see its ``--help``). One whose peer library or device is missing is
skipped with one line. Other processes on the machine skew the figures: run the suite on an idle machine and
compare figures only within one run.

The learning runs at the published budgets (hours) are ``benchmarks/learning_suite.py``; the investigations behind
the design choices are in ``benchmarks/studies/`` (see its README.md).
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")


def missing(module: str, install: str) -> Callable[[], Optional[str]]:
    """A check that gives the reason to skip when ``module`` is not importable, else None."""
    def check() -> Optional[str]:
        return None if importlib.util.find_spec(module) else f"needs {module} ({install})"
    return check


def any_of(*checks: Callable[[], Optional[str]]) -> Callable[[], Optional[str]]:
    """A check that gives the first reason to skip of ``checks``, else None."""
    return lambda: next((reason for reason in (check() for check in checks) if reason), None)


def no_cuda() -> Optional[str]:
    import torch
    return None if torch.cuda.is_available() else "torch sees no CUDA device"


@dataclass(frozen=True)
class Benchmark:
    """One script of the suite: what it measures, its arguments for the full and the quick run, and when to skip."""
    name: str  # benchmarks/<name>.py, writing results/<name>.json
    what: str
    minutes: float  # the full run on an idle 2-core machine
    full: Tuple[str, ...] = ()
    quick: Tuple[str, ...] = ()
    skip: Callable[[], Optional[str]] = lambda: None


SUITE: List[Benchmark] = [
    Benchmark("collector_throughput", "collector env steps/s on CartPole beside raw gymnasium", 1,
              quick=("--seconds", "0.3", "--repeats", "1", "--no-subprocess")),
    Benchmark("buffer", "replay buffer push/sample speed and memory", 0.2, quick=("--quick",)),
    Benchmark("impala_cartpole_learning", "learning speed: CartPole IMPALA env steps and seconds to 475", 3,
              full=("--seeds", *map(str, range(30))), quick=("--seeds", "0", "--max-env-step", "1000")),
    Benchmark("sac_speed", "SAC env steps/s beside Stable-Baselines3 and SBX, Pendulum [256, 256]", 20,
              full=("--hidden", "256", "--rows", "defaults", "--repeats", "3"),
              quick=("--hidden", "64", "--rows", "defaults", "--steps", "300", "500", "--warmup", "100",
                     "--sbx-timed", "10"),
              skip=missing("stable_baselines3", "the bench extra: pip install -e '.[bench]'")),
    Benchmark("ppo_cartpole_peers", "PPO env steps and seconds to 475 on CartPole beside SB3 and a CleanRL-style PPO",
              10, quick=("--quick",), skip=missing("stable_baselines3", "the bench extra: pip install -e '.[bench]'")),
    Benchmark("dqn_cartpole_peers", "DQN env steps and seconds to 475 on CartPole beside SB3 (rl-zoo's settings)", 6,
              quick=("--quick",), skip=missing("stable_baselines3", "the bench extra: pip install -e '.[bench]'")),
    Benchmark("dqn_lunarlander_peers", "DQN env steps and seconds to 200 on LunarLander beside SB3 (rl-zoo's settings)",
              20, quick=("--quick",), skip=any_of(missing("stable_baselines3", "the bench extra: pip install -e '.[bench]'"),
                                                  missing("Box2D", "the box2d extra: pip install -e '.[box2d]'"))),
    Benchmark("parallel_scaling", "serial against parallel mode (1 and 2 collectors), CartPole IMPALA", 5,
              full=("--repeats", "5"), quick=("--modes", "parallel1", "--env-step", "2000")),
    Benchmark("autocast_speed", "Pong PPO and IMPALA training env steps/s in float32 and bfloat16 (envpool)", 5,
              quick=("--env-step", "5000"), skip=missing("envpool", "pip install envpool (and the atari extra)")),
    Benchmark("gpu_check", "every policy with policy.cuda=True: learner updates/s, syncs per update", 3,
              skip=no_cuda),
]


def command(bench: Benchmark, quick: bool, output: str) -> List[str]:
    """The script's command line; SBX is left out of sac_speed (with one line) where it is not installed."""
    args = list(bench.quick if quick else bench.full)
    if bench.name == "sac_speed" and importlib.util.find_spec("sbx") is None:
        print("sac_speed: SBX is not installed (sbx-rl, the bench extra): ding_lite against SB3 only", flush=True)
        args.append("--no-sbx")
    return [sys.executable, os.path.join(HERE, f"{bench.name}.py"), *args, "--output", output]


def run(benches: Sequence[Benchmark], quick: bool, results_dir: str) -> List[Tuple[str, str, float]]:
    """Run each benchmark in turn; (name, 'ok' / 'skipped: why' / 'failed (exit N)', seconds) per benchmark."""
    os.makedirs(results_dir, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    outcome = []
    for bench in benches:
        reason = bench.skip()
        if reason:
            print(f"{bench.name}: skipped: {reason}", flush=True)
            outcome.append((bench.name, f"skipped: {reason}", 0.0))
            continue
        output = os.path.join(results_dir, f"{bench.name}.json")
        print(f"==> {bench.name}: {bench.what}" + ("" if quick else f" (about {bench.minutes:g} min)"), flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call(command(bench, quick, output), cwd=ROOT, env=env)
        status = "ok" if rc == 0 and os.path.isfile(output) else f"failed (exit {rc})"
        outcome.append((bench.name, status, time.perf_counter() - t0))
    return outcome


def main(argv: Optional[Sequence[str]] = None) -> int:
    names = [b.name for b in SUITE]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].rstrip(","),
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog="\n".join(
                                         f"  {b.name:26}{b.what}" for b in SUITE))
    parser.add_argument("--quick", action="store_true",
                        help="each benchmark at a tiny budget, to check that it runs; its figures mean nothing")
    parser.add_argument("--only", nargs="+", choices=names, metavar="NAME", help="these benchmarks only")
    parser.add_argument("--results-dir", default=None,
                        help="where the results files go (default benchmarks/results/; with --quick a temporary "
                             "directory)")
    args = parser.parse_args(argv)
    benches = [b for b in SUITE if not args.only or b.name in args.only]
    results_dir = args.results_dir or (tempfile.mkdtemp(prefix="ding_lite_bench_") if args.quick else RESULTS)
    outcome = run(benches, args.quick, results_dir)
    print(f"\nresults in {results_dir}:")
    for name, status, seconds in outcome:
        print(f"  {name:26}{status}" + (f" ({seconds:.0f} s)" if status == "ok" else ""))
    return 1 if any(status.startswith("failed") for _, status, _ in outcome) else 0


if __name__ == "__main__":
    sys.exit(main())

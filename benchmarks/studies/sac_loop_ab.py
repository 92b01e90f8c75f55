"""A/B of a change to SAC's per-step code, timed inside a loop like a run's: act, env step, sample, update.

Timed on its own, an update (or an action) runs with warm caches; in a run it follows the env step and the other
half of the loop, and small calls cost several times more (an action right after a [256, 256] update: 285 against 57
µs repeated on its own on the 2-core VM). So each timed step here is what a serial run does per env step: one action
from the policy's collect mode on a real Pendulum-v1, the env step, a batch of 256 drawn from a 100k-transition
buffer, and one update. The two sides are two policies built through the real config path (pendulum_sac.py, [H, H]
networks, batch 256); chunks of ``--chunk`` steps alternate between them (order reversed every other round), and the
ratio of each round's pair is reported (median and interquartile range), so that the VM's slow and fast spells hit
both alike. Changes:

* ``fold``: the compiled hand-written update without and with the optimizer's step, the temperature's clamp and the
  Polyak update inside its program (``sac.compiled_update.CompiledUpdate.fold``), both ``compile_update=True``;
* ``acting``: acting through the actor's modules against layer by layer (``sac.acting.ActingActor``).

Writes benchmarks/studies/results/sac_loop_ab.json.

    python benchmarks/studies/sac_loop_ab.py [--changes fold acting] [--hidden 256 64] [--threads 2 1] [--rounds 60]
                                     [--chunk 20]
"""
import argparse
import statistics
import sys
import time

import gymnasium as gym
import torch

import sac_update_profile as P  # a study beside this one; it puts the repository and benchmarks/ on the path
from machine import STUDY_RESULTS, write_results

CHANGES = ("fold", "acting")
BUFFER = 100_000


def build(change: str, after: bool, hidden: int, threads: int):
    """The policy of one side: ``after`` False is the code without the change."""
    shape = argparse.Namespace(hidden=hidden, batch=256, obs=3, act=1)
    _, policy, _ = P.build_policy(shape, threads, {"policy.learn.compile_update": change == "fold"})
    if change == "fold" and not after:
        policy._update.folded = False
    if change == "acting" and not after:
        policy._actions._acting = None
    return policy


class Loop:
    """One side's loop: its policy, its own Pendulum-v1 and a shared buffer of random transitions."""

    def __init__(self, policy, buffer: dict) -> None:
        self.policy, self.buffer = policy, buffer
        self.env = gym.make("Pendulum-v1")
        self.obs = self.env.reset(seed=0)[0]

    def step(self) -> None:
        action = self.policy.collect_mode.forward(torch.as_tensor(self.obs).unsqueeze(0))["action"]
        obs, _, terminated, truncated, _ = self.env.step(action[0].numpy() * 2.0)
        self.obs = self.env.reset()[0] if terminated or truncated else obs
        index = torch.randint(BUFFER, (256,))
        self.policy._forward_learn({k: x[index] for k, x in self.buffer.items()})


def ab(change: str, hidden: int, threads: int, rounds: int, chunk: int) -> dict:
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    buffer = {"obs": torch.randn(BUFFER, 3, generator=g), "next_obs": torch.randn(BUFFER, 3, generator=g),
              "action": torch.rand(BUFFER, 1, generator=g) * 2 - 1, "reward": torch.randn(BUFFER, generator=g),
              "terminated": torch.zeros(BUFFER, dtype=torch.bool), "truncated": torch.zeros(BUFFER, dtype=torch.bool)}
    loops = {side: Loop(build(change, side == "after", hidden, threads), buffer) for side in ("before", "after")}
    torch.set_num_threads(threads)
    for loop in loops.values():  # compilation (fold) and warm-up
        for _ in range(30):
            loop.step()
    ms = {side: [] for side in loops}
    for r in range(rounds):
        for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
            start = time.perf_counter()
            for _ in range(chunk):
                loops[side].step()
            ms[side].append(1e3 * (time.perf_counter() - start) / chunk)
    ratios = sorted(b / a for b, a in zip(ms["before"], ms["after"]))
    q = len(ratios) // 4
    return {"change": change, "hidden": hidden, "threads": threads, "rounds": rounds, "chunk": chunk,
            "before_ms_per_step": round(statistics.median(ms["before"]), 3),
            "after_ms_per_step": round(statistics.median(ms["after"]), 3),
            "speedup_median": round(statistics.median(ratios), 3),
            "speedup_iqr": [round(ratios[q], 3), round(ratios[-q - 1], 3)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", nargs="+", default=list(CHANGES), choices=CHANGES)
    parser.add_argument("--hidden", type=int, nargs="+", default=[256, 64])
    parser.add_argument("--threads", type=int, nargs="+", default=[2, 1])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--chunk", type=int, default=20)
    args = parser.parse_args()
    if len(args.threads) != len(args.hidden):
        sys.exit("--threads: one count per --hidden size (they are paired)")
    rows = []
    for change in args.changes:
        for hidden, threads in zip(args.hidden, args.threads):
            row = ab(change, hidden, threads, args.rounds, args.chunk)
            rows.append(row)
            print(f"{change:7s} [{hidden}, {hidden}] {threads} thread(s): {row['before_ms_per_step']:.3f} -> "
                  f"{row['after_ms_per_step']:.3f} ms per step, speed-up median {row['speedup_median']:.3f} "
                  f"(IQR {row['speedup_iqr']})", flush=True)
    write_results("sac_loop_ab", results_dir=STUDY_RESULTS, settings=vars(args), rows=rows, torch=torch.__version__)


if __name__ == "__main__":
    main()

"""torch_threads = 1, 2 and 'auto' for a learner, on an idle machine and beside a CPU hog (issue 25, item 8).

Two learners whose width and batch make the old rule pick every core (2 on the 2-core VM):

* ``impala128``: cartpole_impala.py with 128-unit layers (encoder [128, 128], heads 128), 32 unrolls of 16 steps;
* ``sac256``: pendulum_sac.py with [256, 256] actor and critics, batch 256.

One process per (case, condition) builds three runs through the real config path, one per setting (``compile_input``
sets the threads, as in a run, and 'auto' gets the ``ThreadTuner`` that ``TrainingRun`` gives its learner), each with
its own policy, collector and replay buffer, and trains them in turn: ``--rounds`` rounds of a ``--segment-s``
second segment each, the order rotated every round. A segment is the serial pipeline's loop without evaluation,
logging or checkpoints (collect ``n_sample``, push, ``update_per_collect`` updates through the ``Learner``), at that
run's threads. Taking turns inside one process puts the three settings beside the same background load, which on a
shared machine drifts more from minute to minute than the settings differ. The figure is updates per second over a
setting's segments (collection included; the tuner's checks included). Conditions: ``idle`` (nothing of ours beside
it; other users of the machine are not stopped, so their load is recorded) and ``hog`` (one ``while True: pass``
process per core, started before the runs are built and killed after).

Beside every segment: the 1-minute load average and the CPUs other processes kept busy (/proc/stat less this
process's CPU time; the hogs count as others). As the other users' load comes and goes, the summary also splits the
rounds by it: "free" rounds (others under 0.25 CPU in all three segments) and "taken" ones (0.75 or more in all
three), whatever the condition. Writes benchmarks/studies/results/threads_contention.json.

``--wait-policies`` adds 1 and 2 threads (half the rounds) with OpenMP's waiting changed in the environment before
torch loads: ``OMP_WAIT_POLICY=PASSIVE`` and ``GOMP_SPINCOUNT=1000`` beside the default (spinning).

    python benchmarks/studies/threads_contention.py [--cases impala128 sac256] [--rounds 8] [--segment-s 3] [--wait-policies]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]  # ding_lite; machine.py

from machine import machine_info  # noqa: E402  (benchmarks/machine.py)

CASES = {
    "impala128": ("cartpole_impala.py", {"policy.model.encoder_hidden_size_list": [128, 128],
                                         "policy.model.actor_head_hidden_size": 128,
                                         "policy.model.critic_head_hidden_size": 128}),
    "sac256": ("pendulum_sac.py", {"policy.model.actor_head_hidden_size": 256,
                                   "policy.model.critic_head_hidden_size": 256}),
}
SETTINGS = (1, 2, "auto")
CONDITIONS = ("idle", "hog")
HOG = "while True: pass"
FREE, TAKEN = 0.25, 0.75  # a round's CPUs were free: others kept under FREE busy in all its segments; taken: >= TAKEN


# ---- the measured process ----------------------------------------------------------------------------------------
class Run:
    """One setting's policy, collector, buffer and learner."""

    def __init__(self, case: str, setting) -> None:
        import torch
        from ding_lite.config import read_config_file
        from ding_lite.entry.build import build, build_buffer, compile_input
        from ding_lite.torch_utils.threads import learner_tuner
        from ding_lite.worker import Learner
        from ding_lite.worker.collector import SampleCollector
        name, overrides = CASES[case]
        self.setting = setting
        self.cfg = compile_input(read_config_file(os.path.join(ROOT, "dizoo_configs", name)), 0,
                                 dict(overrides, torch_threads=setting, **{"env.evaluator_env_num": 1}))
        self.threads = torch.get_num_threads()  # what compile_input set: the number, or the rule's count
        self.parts = build(self.cfg, 0)
        self.collector = SampleCollector(self.parts.collector_env, self.parts.policy.collect_mode)
        self.buffer = build_buffer(self.cfg, 0)
        self.learner = Learner(self.parts.policy.learn_mode, threads=learner_tuner(self.cfg.torch_threads))
        warm_up = self.cfg.policy.get("random_collect_size", 0)
        if warm_up:
            self.buffer.push(self.collector.collect(warm_up, random_action=True), self.collector.envstep)

    def segment(self, seconds: float) -> int:
        """Train for ``seconds``; the number of updates made."""
        import torch
        if self.learner.threads is None:
            torch.set_num_threads(self.threads)
        else:
            self.learner.threads.apply()  # another run changed torch's threads: back to the tuner's choice
        learn, start, before = self.cfg.policy.learn, time.perf_counter(), self.learner.train_iter
        while time.perf_counter() - start < seconds:
            self.buffer.push(self.collector.collect(self.cfg.policy.collect.n_sample), self.collector.envstep,
                             collect_iter=self.learner.train_iter)
            for _ in range(learn.update_per_collect):
                batch = self.buffer.sample(learn.batch_size, self.learner.train_iter)
                if batch is not None:
                    self.learner.train(batch)
        return self.learner.train_iter - before

    def close(self) -> None:
        self.parts.collector_env.close(), self.parts.evaluator_env.close()


def child(case: str, rounds: int, segment_s: float, settings=SETTINGS) -> dict:
    from ding_lite.torch_utils.threads import cpu_counters
    runs = [Run(case, setting) for setting in settings]
    for run in runs:  # first allocations, the thread pool's start
        run.segment(0.5)
    segments = []
    for r in range(rounds):
        for run in runs[r % len(runs):] + runs[:r % len(runs)]:
            c0, t0 = cpu_counters(), time.perf_counter()
            n = run.segment(segment_s)
            c1, t1 = cpu_counters(), time.perf_counter()
            others = ((c1[1] - c0[1]) - (c1[2] - c0[2])) / (t1 - t0) if c0 and c1 else None
            segments.append({"round": r, "setting": run.setting, "updates": n, "seconds": round(t1 - t0, 3),
                             "loadavg_1min": round(os.getloadavg()[0], 2),
                             "cpus_busy_others": None if others is None else round(max(0.0, others), 2)})
    out = {"case": case, "rule_threads": runs[-1].threads, "segments": segments}
    tuner = runs[-1].learner.threads
    out["tuner"] = None if tuner is None else {
        "updates_at": {str(k): v for k, v in tuner.updates.items()}, "probes": tuner.probes,
        "final_threads": tuner.current,
        "decisions": [{"threads": d["threads"], "free_cpus": d["free_cpus"] and round(d["free_cpus"], 2),
                       "ms": {str(k): round(1e3 * v, 2) for k, v in d["medians_s"].items()}}
                      for d in list(tuner.decisions)[:10]]}
    for run in runs:
        run.close()
    return out


# ---- the driver --------------------------------------------------------------------------------------------------
def measure(case: str, condition: str, args, settings=SETTINGS, env=None) -> dict:
    cores = len(os.sched_getaffinity(0))
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(cores)] if condition == "hog" else []
    try:
        load_before = os.getloadavg()[0]
        out = subprocess.run([sys.executable, __file__, "--child", case, str(args.rounds), str(args.segment_s),
                              ",".join(map(str, settings))], capture_output=True, text=True, cwd=ROOT,
                             env=dict(os.environ, PYTHONPATH=ROOT, **(env or {})))  # this checkout's ding_lite
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    if out.returncode != 0:
        raise RuntimeError(f"{case} {condition} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result.update(condition=condition, loadavg_1min_before=round(load_before, 2))
    return result


def summarise(result: dict) -> dict:
    segs = result["segments"]
    rate = {s: sum(x["updates"] for x in segs if x["setting"] == s) / sum(x["seconds"] for x in segs
                                                                          if x["setting"] == s) for s in SETTINGS}
    best = max(rate[1], rate[2])
    per_round = []  # each round's (better of 1 and 2) / auto, the three side by side in time
    for r in sorted({x["round"] for x in segs}):
        ups = {x["setting"]: x["updates"] / x["seconds"] for x in segs if x["round"] == r}
        per_round.append(max(ups[1], ups[2]) / max(ups["auto"], 1e-9))
    others = [x["cpus_busy_others"] for x in segs if x["cpus_busy_others"] is not None]
    loads = [x["loadavg_1min"] for x in segs]
    by_load = {}  # rounds by what the other processes did in all three segments, whatever the condition's label
    for label, keep in (("cpus_free", lambda o: max(o) < FREE), ("cpus_taken", lambda o: min(o) >= TAKEN)):
        rounds = [r for r in {x["round"] for x in segs}
                  if None not in (o := [x["cpus_busy_others"] for x in segs if x["round"] == r]) and keep(o)]
        if rounds:
            rr = {s: sum(x["updates"] for x in segs if x["setting"] == s and x["round"] in rounds)
                  / sum(x["seconds"] for x in segs if x["setting"] == s and x["round"] in rounds) for s in SETTINGS}
            by_load[label] = {"rounds": len(rounds), **{f"updates_per_s_{s}": round(rr[s], 2) for s in SETTINGS},
                              "auto_slowdown": round(max(rr[1], rr[2]) / rr["auto"], 3),
                              "old_auto_slowdown": round(max(rr[1], rr[2]) / rr[2], 3)}
    return {"case": result["case"], "condition": result["condition"],
            **{f"updates_per_s_{s}": round(rate[s], 2) for s in SETTINGS},
            "auto_slowdown": round(best / rate["auto"], 3), "old_auto_slowdown": round(best / rate[2], 3),
            "auto_slowdown_per_round_max": round(max(per_round), 3),
            "cpus_busy_others_median": round(statistics.median(others), 2) if others else None,
            "cpus_busy_others_range": [min(others), max(others)] if others else None,
            "loadavg_1min_range": [min(loads), max(loads)], "by_measured_load": by_load, "tuner": result["tuner"]}


def wait_policies(args) -> list:
    """1 and 2 threads with libgomp's waiting as torch has it (spinning), passive, and a short spin (what 'auto'
    could have set in the environment instead, before torch loads)."""
    rows = []
    print("\n1 and 2 threads by OpenMP wait policy (ms per update: seconds / updates, collection included)")
    for case in args.cases:
        for condition in args.conditions:
            for label, env in (("spin (default)", {}), ("OMP_WAIT_POLICY=PASSIVE", {"OMP_WAIT_POLICY": "PASSIVE"}),
                               ("GOMP_SPINCOUNT=1000", {"GOMP_SPINCOUNT": "1000"})):
                half = argparse.Namespace(rounds=max(2, args.rounds // 2), segment_s=args.segment_s)
                result = measure(case, condition, half, settings=(1, 2), env=env)
                ms = {}
                for t in (1, 2):
                    segs = [x for x in result["segments"] if x["setting"] == t]
                    ms[t] = 1e3 * sum(x["seconds"] for x in segs) / max(1, sum(x["updates"] for x in segs))
                others = [x["cpus_busy_others"] for x in result["segments"] if x["cpus_busy_others"] is not None]
                row = {"case": case, "condition": condition, "wait": label, "ms_1": round(ms[1], 2),
                       "ms_2": round(ms[2], 2),
                       "cpus_busy_others_median": round(statistics.median(others), 2) if others else None,
                       "segments": result["segments"]}
                rows.append(row)
                print(f"{case:<10}{condition:>6}  {label:<26}{row['ms_1']:>8.2f}{row['ms_2']:>8.2f}"
                      f"   others busy {row['cpus_busy_others_median']}", flush=True)
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        case, rounds, segment_s, settings = sys.argv[2:6]
        settings = [s if s == "auto" else int(s) for s in settings.split(",")]
        print(json.dumps(child(case, int(rounds), float(segment_s), settings)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--conditions", nargs="+", default=list(CONDITIONS), choices=list(CONDITIONS))
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--segment-s", type=float, default=3.0)
    parser.add_argument("--wait-policies", action="store_true",
                        help="also 1 and 2 threads with OpenMP's waiting changed before torch loads")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    import torch
    results, summary = [], []
    print("updates/s over each setting's segments; slowdown = (better of 1 and 2 threads) / setting; the old 'auto' "
          "ran 2 threads here")
    print(f"{'case':<10}{'condition':>10}{'1 thread':>10}{'2 threads':>11}{'auto':>8}{'auto slowdown':>15}"
          f"{'(worst round)':>14}{'2-thread slowdown':>19}{'others busy, CPUs':>19}{'load avg':>13}  auto's updates",
          flush=True)
    for case in args.cases:
        for condition in args.conditions:
            result = measure(case, condition, args)
            results.append(result)
            s = summarise(result)
            summary.append(s)
            others = s["cpus_busy_others_range"]
            print(f"{case:<10}{condition:>10}{s['updates_per_s_1']:>10.1f}{s['updates_per_s_2']:>11.1f}"
                  f"{s['updates_per_s_auto']:>8.1f}{s['auto_slowdown']:>15.2f}{s['auto_slowdown_per_round_max']:>14.2f}"
                  f"{s['old_auto_slowdown']:>19.2f}{s['cpus_busy_others_median']:>9.2f} [{others[0]}-{others[1]}]"
                  f"{s['loadavg_1min_range'][0]:>7.1f}-{s['loadavg_1min_range'][1]:<5.1f}"
                  f"  {s['tuner'] and s['tuner']['updates_at']}", flush=True)
    print(f"\nby the load measured in each round (free: others < {FREE} CPUs in all three segments; taken: >= {TAKEN})")
    for s in summary:
        for label, row in s["by_measured_load"].items():
            print(f"{s['case']:<10}{s['condition']:>6} {label:<11}{row['rounds']:>3} rounds"
                  f"{row['updates_per_s_1']:>9.1f}{row['updates_per_s_2']:>9.1f}{row['updates_per_s_auto']:>9.1f}"
                  f"   auto slowdown {row['auto_slowdown']:.2f}, 2-thread slowdown {row['old_auto_slowdown']:.2f}",
                  flush=True)
    waits = wait_policies(args) if args.wait_policies else []
    name = "threads_contention" + (f"_{args.tag}" if args.tag else "")
    path = os.path.join(ROOT, "benchmarks", "studies", "results", f"{name}.json")
    with open(path, "w") as f:
        json.dump({"settings": vars(args), "summary": summary, "results": results, "wait_policies": waits,
                   "machine": machine_info(torch=torch.__version__)}, f, indent=2)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""A pilot's read-out from its run directory: per bin of env steps, the collector's episode return and the learner's
entropy, gradient norms and batch age, from the run's TensorBoard files (tensorboardX's protos; no tensorboard).

    python benchmarks/studies/pilot_readout.py RUN_DIR [RUN_DIR ...] [--bin 100000] [--json OUT]
"""
import argparse
import glob
import json
import os
import struct
from collections import defaultdict
from typing import Dict, List, Tuple

from tensorboardX.proto import event_pb2

TAGS = {"collector/episode_return": "return", "learner/entropy_loss": "entropy", "learner/grad_norm": "grad_norm",
        "learner/grad_norm_encoder_policy": "enc_policy", "learner/grad_norm_encoder_value": "enc_value",
        "learner/grad_norm_encoder_entropy": "enc_entropy", "buffer/batch_age_mean": "age"}


def scalars(path: str) -> List[Tuple[str, int, float]]:
    with open(path, "rb") as f:
        data = f.read()
    out, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        if pos + 12 + length > len(data):
            break  # a record still being written
        event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
        pos += 12 + length + 4
        out += [(v.tag, event.step, v.simple_value) for v in event.summary.value if v.HasField("simple_value")]
    return out


def readout(run_dir: str, bin_size: int) -> Dict[int, Dict[str, float]]:
    """bin start (env steps) -> {name: mean}. Learner scalars are logged per train_iter: placed on the env-step axis
    through the progress rows (speed/* are logged per env step at the same moments)."""
    env_rows, iter_rows = [], []
    for path in glob.glob(os.path.join(run_dir, "log", "events.out.tfevents.*")):
        env_rows += scalars(path)
    for path in glob.glob(os.path.join(run_dir, "log", "train_iter", "events.out.tfevents.*")):
        iter_rows += scalars(path)
    # the n-th learner row of a tag belongs to the n-th progress line, whose env step the buffer/size row has
    progress_steps = sorted(step for tag, step, _ in env_rows if tag == "buffer/size")
    by_tag = defaultdict(list)
    for tag, step, value in env_rows:
        by_tag[tag].append((step, value))
    for tag, it, value in sorted(iter_rows, key=lambda r: r[1]):
        by_tag[tag].append((it, value))
    bins: Dict[int, Dict[str, List[float]]] = defaultdict(lambda: defaultdict(list))
    for tag, name in TAGS.items():
        rows = sorted(by_tag.get(tag, []))
        if tag.startswith("learner/"):
            rows = [(progress_steps[i], v) for i, (_, v) in enumerate(rows) if i < len(progress_steps)]
        for step, value in rows:
            bins[step // bin_size * bin_size][name].append(value)
    return {b: {k: sum(v) / len(v) for k, v in d.items()} for b, d in sorted(bins.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--bin", type=int, default=100_000)
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args()
    everything = {}
    for run in args.runs:
        table = readout(run, args.bin)
        everything[os.path.basename(run.rstrip("/"))] = {str(k): v for k, v in table.items()}
        print(os.path.basename(run.rstrip("/")))
        names = ["return", "entropy", "grad_norm", "enc_policy", "enc_value", "enc_entropy", "age"]
        print("  env steps  " + "  ".join(f"{n:>11}" for n in names))
        for start, row in table.items():
            print(f"  {start:>9,}  " + "  ".join(f"{row[n]:>11.4g}" if n in row else f"{'-':>11}" for n in names))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(everything, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()

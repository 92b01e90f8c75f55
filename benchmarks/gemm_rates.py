"""Matmul rates of torch's CPU backend against XLA's (JAX) at the shapes of a SAC update, float32.

For each thread count, in a child process of its own (JAX's threads are fixed when it starts: XLA_FLAGS with one
thread, and the process pinned to that many CPUs), times C = A @ B for A (M, K), B (K, N) at the shapes of a
[H, H] SAC update with batch 256: hidden layers (256 x H x H), twice the batch (512 x H x H), the first layer of a
Pendulum critic (256 x 4 x H) and an output layer (256 x H x 1); plus a chain of ten (256 x H) @ (H x H) matmuls
each followed by tanh, eager in torch and jitted in JAX (one program: XLA's fusion against torch's dispatch).
Medians of 500 calls; GFLOP/s = 2 M K N / time. Needs the extra ``bench`` (jax). Writes
benchmarks/results/gemm_rates.json.

    python benchmarks/gemm_rates.py [--hidden 256] [--threads 1 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def median_us(fn, n: int = 500) -> float:
    for _ in range(20):
        fn()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e6 * statistics.median(times)


def child(hidden: int, threads: int) -> dict:
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:threads])
    import jax
    import jax.numpy as jnp
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    rows = []
    matmul = jax.jit(lambda x, y: x @ y)
    for m, k, n in [(256, hidden, hidden), (512, hidden, hidden), (256, 4, hidden), (256, hidden, 1)]:
        a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
        ta, tb, ja, jb = torch.from_numpy(a), torch.from_numpy(b), jnp.asarray(a), jnp.asarray(b)
        t_us = median_us(lambda: torch.mm(ta, tb))
        j_us = median_us(lambda: matmul(ja, jb).block_until_ready())
        flop = 2 * m * k * n
        rows.append({"shape": [m, k, n], "torch_us": round(t_us, 1), "jax_us": round(j_us, 1),
                     "torch_gflops": round(flop / t_us / 1e3, 1), "jax_gflops": round(flop / j_us / 1e3, 1)})
    x = rng.standard_normal((256, hidden), dtype=np.float32)
    ws = [rng.standard_normal((hidden, hidden), dtype=np.float32) / hidden ** 0.5 for _ in range(10)]
    tx, tws, jx, jws = torch.from_numpy(x), [torch.from_numpy(w) for w in ws], jnp.asarray(x), [jnp.asarray(w) for w in ws]

    def torch_chain():
        h = tx
        for w in tws:
            h = torch.tanh(h @ w)
        return h

    @jax.jit
    def jax_chain(h, weights):
        for w in weights:
            h = jnp.tanh(h @ w)
        return h
    chain = {"torch_eager_us": round(median_us(torch_chain), 1),
             "jax_jit_us": round(median_us(lambda: jax_chain(jx, jws).block_until_ready()), 1)}
    return {"threads": threads, "hidden": hidden, "matmuls": rows, "chain_10_matmul_tanh": chain,
            "torch": torch.__version__, "jax": jax.__version__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print("GEMM_RESULT " + json.dumps(child(args.hidden, args.child)), flush=True)
        return
    from machine import write_results
    results = []
    for threads in args.threads:
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        if threads == 1:
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
                                "intra_op_parallelism_threads=1").strip()
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--hidden", str(args.hidden), "--child",
                               str(threads)], env=env, capture_output=True, text=True)
        lines = [x for x in proc.stdout.splitlines() if x.startswith("GEMM_RESULT ")]
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"child failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        res = json.loads(lines[-1].split(" ", 1)[1])
        results.append(res)
        print(f"{threads} thread(s):")
        for row in res["matmuls"]:
            print(f"  {str(row['shape']):18} torch {row['torch_us']:8.1f} us ({row['torch_gflops']:6.1f} GFLOP/s)"
                  f"   jax {row['jax_us']:8.1f} us ({row['jax_gflops']:6.1f} GFLOP/s)")
        c = res["chain_10_matmul_tanh"]
        print(f"  10 x (matmul + tanh): torch eager {c['torch_eager_us']} us, jax jit {c['jax_jit_us']} us")
    write_results("gemm_rates", settings=vars(args), results=results)


if __name__ == "__main__":
    main()

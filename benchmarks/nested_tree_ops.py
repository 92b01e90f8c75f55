"""Nested data: plain nested dicts (``ding_lite.torch_utils.tree``) against treevalue's ``FastTreeValue``, on the
tree work of the collector's hot loop, the replay buffer and the learner's prelude.

Inside ding_lite an observation batch is a tensor or a nested dict of tensors, and so are the structures the hooks
see (a transition, a time-major segment, a train sample). This script times the tree work those structures cost per
vector step and per collected batch, once with the plain-dict helpers ding_lite uses and once as it would be with
treevalue (simulated here: ding_lite's modules are not changed), for three observation structures:

* ``cartpole``: one ``(8, 4)`` float32 tensor (today's path; the observation stays a tensor in both variants, only
  the transition/segment/sample trees differ);
* ``minigrid``: a Dict like MiniGrid's, ``{'image': (8, 7, 7, 3) uint8, 'direction': (8,) int64}``;
* ``deep``: a dict of 6 leaves on 2 levels.

Per vector step (8 envs): ``obs`` and ``next_obs`` arrays -> tensor trees, a model reading every observation leaf,
``_process_transition``'s transition tree. Per collected batch (``n_sample=16``: 2 segments of T=32 steps of 8 envs,
as ``benchmarks/collector_throughput.py`` collects): 2 x stacking T transitions (``tree_stack``), 2 x the train
sample's transpose ``(T, N, ...) -> (N, T, ...)`` (``_get_train_sample``), the ``tree_cat`` of the 2 segments'
samples, and the buffer push's flattening into leaf columns. Per learner batch (32 unrolls): the buffer's rebuild of
the nested batch from its gathered columns and the learner's transpose back to time-major.

The treevalue variant uses whichever of its ways is fastest for each op; all are timed and recorded, and the table
also shows the way treevalue's documentation teaches ("public API"). To build a tree: ``FastTreeValue(dict)`` (the
public constructor, which calls ``repr()`` on every leaf) or ``FastTreeValue(create_storage(dict))`` (the private
storage constructor, ``treevalue.tree.common``); observations also as ``FastTreeValue(arrays).map(...)``. To stack or
concatenate: ``FastTreeValue.func(subside=True)(torch.stack)``, ``subside(trees).map(torch.stack)``, or through flat
leaf lists (``flatten_values``, ``torch.stack`` per leaf, ``unflatten``). To transpose: the broadcast method
``tv.transpose(0, 1)`` or ``tv.map(...)``. The push: ``treevalue.flatten`` (no conversion to dicts needed there), or a
conversion to dicts and the buffer's own flattening; the sampled batch: a wrapped nested dict or ``unflatten``.

Each op is timed as a loop of calls taking about ``--ms`` ms; the variants and ops run interleaved, ``--rounds``
times, and the table gives the median over rounds (the JSON also has the quartiles: the noise).

Then a real collector: ``SampleCollector`` on CartPole-v1 with the IMPALA collect policy from
``dizoo_configs/cartpole_impala.py`` (8 envs, unroll_len 32, n_sample 16; the setup of
``benchmarks/collector_throughput.py``, reused) beside three copies of its ``step``/``collect`` defined here: with plain
dicts (a control: it should match the library), with ``FastTreeValue`` transitions, segments and samples done the
fastest treevalue ways, and the same through treevalue's documented API only (in both, the batch handed back is
converted to nested dicts, what the buffer and learner take). Every variant runs once per round for ``--seconds``,
``--repeats`` rounds, one torch thread; the ratio to the library is taken per round and its median reported, on wall
time and on this process's CPU time. That gives the tree work as a fraction of a real CartPole collector step, and the
throughput ratio the issue's 3 % criterion is about.

Also: the time ``import treevalue`` takes (cold, and after torch) and the warnings it emits, in fresh interpreters.

Run from the repository root: ``python benchmarks/nested_tree_ops.py`` (about 2 min; ``--quick``: about 20 s, fewer
and shorter trials, writes nothing unless ``--output`` is given). Writes ``benchmarks/results/nested_tree_ops.json``
and ``.txt`` (the printed table).
"""
import argparse
import io
import os
import statistics
import subprocess
import sys
import time
import warnings
from contextlib import redirect_stdout
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # treevalue 1.5.0 under torch 2.x; measured below
    import treevalue
    from treevalue import FastTreeValue
    from treevalue.tree.common import create_storage

from ding_lite.data.buffer import _build, flatten_tree  # noqa: E402
from ding_lite.envs.obs_space import obs_to_tensor  # noqa: E402
from ding_lite.torch_utils.tree import tree_cat, tree_map, tree_stack  # noqa: E402
from ding_lite.utils.file_io import atomic_write_json  # noqa: E402
from machine import machine_info  # noqa: E402  (benchmarks/machine.py)

N_ENV, T, SEGMENTS, LEARN_B, N_ACT = 8, 32, 2, 32, 2
RESULT = os.path.join(ROOT, "benchmarks", "results", "nested_tree_ops.json")


# ---- the observation structures --------------------------------------------------------------------------------------
def make_obs(case: str, rng: np.random.Generator) -> Any:
    """One vector-env observation batch as the env hands it over (NumPy)."""
    if case == "cartpole":
        return rng.standard_normal((N_ENV, 4)).astype(np.float32)
    if case == "minigrid":
        return {"direction": rng.integers(0, 4, N_ENV), "image": rng.integers(0, 11, (N_ENV, 7, 7, 3), dtype=np.uint8)}
    if case == "deep":
        return {"agent": {"pos": rng.standard_normal((N_ENV, 2)).astype(np.float32),
                          "vel": rng.standard_normal((N_ENV, 2)).astype(np.float32),
                          "hp": rng.integers(0, 100, N_ENV)},
                "target": {"pos": rng.standard_normal((N_ENV, 2)).astype(np.float32),
                           "kind": rng.integers(0, 5, N_ENV),
                           "seen": rng.integers(0, 2, (N_ENV, 8), dtype=np.int8)}}
    raise ValueError(case)


CASES = {"cartpole": "CartPole-like: one (8, 4) f32 tensor",
         "minigrid": "MiniGrid-like Dict: image (8,7,7,3) u8, direction (8,) i64",
         "deep": "deeper nest: 6 leaves on 2 levels"}


def leaf_paths(obs: Any) -> List[Tuple[str, ...]]:
    return [p for p, _ in flatten_tree(obs)] if isinstance(obs, dict) else []


# ---- the two variants of each op ------------------------------------------------------------------------------------
def tv(tree: Dict[str, Any]) -> Any:
    """A FastTreeValue of a nested dict (values may be trees), built through its storage. ``FastTreeValue(dict)``
    itself calls ``repr()`` on every leaf (about 60 us a tensor leaf in treevalue 1.5.0); this takes about 0.5 us."""
    return FastTreeValue(create_storage(tree))


def tv_obs_wrap(obs_np: Any) -> Any:
    """treevalue, way 1: the plain conversion, then wrapped (a bare tensor stays a tensor: a tree needs a dict root)."""
    x = obs_to_tensor(obs_np)
    return tv(x) if isinstance(x, dict) else x


def tv_obs_wrap_slow(obs_np: Any) -> Any:
    """The same with the public constructor ``FastTreeValue(dict)``."""
    x = obs_to_tensor(obs_np)
    return FastTreeValue(x) if isinstance(x, dict) else x


def _leaf_tensor(a: np.ndarray) -> torch.Tensor:
    x = torch.from_numpy(a)
    return x.float() if x.is_floating_point() else x


def tv_obs_map(obs_np: Any) -> Any:
    """treevalue, way 2: a tree of the arrays, mapped to tensors."""
    if isinstance(obs_np, dict):
        return tv(obs_np).map(_leaf_tensor)
    return _leaf_tensor(obs_np)


def read_leaves(obs: Any, paths: List[Tuple[str, ...]]) -> List[torch.Tensor]:
    """What an encoder does with a nested observation: fetch every leaf by its key path (works on both)."""
    if not paths:
        return [obs]
    out = []
    for path in paths:
        node = obs
        for key in path:
            node = node[key]
        out.append(node)
    return out


def transition_plain(obs: Any, next_obs: Any, out: Dict[str, torch.Tensor], ts: Dict[str, torch.Tensor]) -> Dict:
    return {"obs": obs, "next_obs": next_obs, "action": out["action"], "reward": ts["reward"],
            "terminated": ts["terminated"], "truncated": ts["truncated"], "logit": out["logit"]}


def _node(x: Any) -> Any:
    """A value for ``create_storage``: a subtree goes in as its storage (a FastTreeValue would be stored as a leaf)."""
    return x._detach() if isinstance(x, FastTreeValue) else x


def transition_tv(obs: Any, next_obs: Any, out: Dict[str, torch.Tensor], ts: Dict[str, torch.Tensor]) -> Any:
    return tv({"obs": _node(obs), "next_obs": _node(next_obs), "action": out["action"], "reward": ts["reward"],
                          "terminated": ts["terminated"], "truncated": ts["truncated"], "logit": out["logit"]})


TV_STACK = FastTreeValue.func(subside=True)(torch.stack)
TV_CAT = FastTreeValue.func(subside=True)(torch.cat)


def tv_stack_subside(trees: List[Any]) -> Any:
    return treevalue.subside(trees).map(torch.stack)


def tv_stack_flat(trees: List[Any]) -> Any:
    """Stack through flat leaf lists: ``treevalue.flatten_values`` of each tree, ``torch.stack`` per leaf, one tree."""
    leaves = [torch.stack(column) for column in zip(*[treevalue.flatten_values(t) for t in trees])]
    return FastTreeValue(treevalue.unflatten(zip(treevalue.flatten_keys(trees[0]), leaves)))


def tv_cat_flat(trees: List[Any]) -> Any:
    leaves = [torch.cat(column) for column in zip(*[treevalue.flatten_values(t) for t in trees])]
    return FastTreeValue(treevalue.unflatten(zip(treevalue.flatten_keys(trees[0]), leaves)))


def tv_to_dict(tree: Any) -> Dict:
    """FastTreeValue -> nested dicts of the same tensors (no copy)."""
    return tree._detach().dump()


def _transpose(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(0, 1)


def tv_unflatten(paths: List[Tuple[str, ...]], leaves: List[torch.Tensor]) -> Any:
    return treevalue.unflatten(list(zip(paths, leaves)))


# ---- timing ---------------------------------------------------------------------------------------------------------
def per_call_us(fn: Callable[[], Any], ms: float) -> Tuple[Callable[[], float], int]:
    """A timer of ``fn`` that loops it enough times to take about ``ms`` ms; returns (timer, loop count)."""
    fn()
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < 0.01:
        fn()
        n += 1
    loops = max(1, int(n * ms / 10))

    def timer() -> float:
        t = time.perf_counter()
        for _ in range(loops):
            fn()
        return (time.perf_counter() - t) / loops * 1e6

    return timer, loops


def build_ops(case: str, seed: int = 0) -> Dict[str, Dict[str, Callable[[], Any]]]:
    """op name -> {variant: zero-argument callable}, on data prepared once for ``case``."""
    rng = np.random.default_rng(seed)
    obs_np, next_np = make_obs(case, rng), make_obs(case, rng)
    paths = leaf_paths(obs_np)
    ts = {"reward": torch.ones(N_ENV), "terminated": torch.zeros(N_ENV, dtype=torch.bool),
          "truncated": torch.zeros(N_ENV, dtype=torch.bool)}

    def out() -> Dict[str, torch.Tensor]:
        return {"action": torch.randint(N_ACT, (N_ENV,)), "logit": torch.randn(N_ENV, N_ACT)}

    steps = [(make_obs(case, rng), make_obs(case, rng), out()) for _ in range(T)]
    seg_plain = [transition_plain(obs_to_tensor(o), obs_to_tensor(n), a, ts) for o, n, a in steps]
    seg_tv = [transition_tv(tv_obs_wrap(o), tv_obs_wrap(n), a, ts) for o, n, a in steps]
    stacked_plain, stacked_tv = tree_stack(seg_plain), TV_STACK(seg_tv)
    sample_plain = tree_map(_transpose, stacked_plain)
    sample_tv = stacked_tv.transpose(0, 1)
    samples_plain = [tree_map(lambda x: x.clone(), sample_plain) for _ in range(SEGMENTS)]
    samples_tv = [sample_tv.map(lambda x: x.clone()) for _ in range(SEGMENTS)]
    batch_plain = tree_cat(samples_plain)
    batch_tv = TV_CAT(samples_tv)
    # the learner batch: what the buffer gathers, one column per leaf, (B, T, ...)
    cols_paths = [p for p, _ in flatten_tree(batch_plain)]
    cols = [x[torch.randint(x.shape[0], (LEARN_B,))] for _, x in flatten_tree(batch_plain)]
    spec: Dict[str, Any] = {}
    for i, path in enumerate(cols_paths):
        node = spec
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = i
    learn_plain = _build(spec, cols)
    learn_tv = tv(learn_plain)

    ops: Dict[str, Dict[str, Callable[[], Any]]] = {
        # per vector step
        "step: obs+next_obs -> tensor tree": {
            "plain": lambda: (obs_to_tensor(obs_np), obs_to_tensor(next_np)),
            "tv:wrap": lambda: (tv_obs_wrap(obs_np), tv_obs_wrap(next_np)),
            "tv:wrap FTV(dict)": lambda: (tv_obs_wrap_slow(obs_np), tv_obs_wrap_slow(next_np)),
            "tv:map": lambda: (tv_obs_map(obs_np), tv_obs_map(next_np))},
        "step: model reads obs leaves": {
            "plain": (lambda o=seg_plain[0]["obs"]: read_leaves(o, paths)),
            "tv": (lambda o=seg_tv[0]["obs"]: read_leaves(o, paths))},
        "step: _process_transition tree": {
            "plain": (lambda o=seg_plain[0]["obs"], n=seg_plain[0]["next_obs"], a=steps[0][2]:
                      transition_plain(o, n, a, ts)),
            "tv": (lambda o=seg_tv[0]["obs"], n=seg_tv[0]["next_obs"], a=steps[0][2]: transition_tv(o, n, a, ts)),
            "tv FTV(dict)": (lambda o=seg_tv[0]["obs"], n=seg_tv[0]["next_obs"], a=steps[0][2]:
                             FastTreeValue(transition_plain(o, n, a, ts)))},
        # per segment (x SEGMENTS per collected batch)
        "segment: stack T transitions": {
            "plain": lambda: tree_stack(seg_plain),
            "tv:func(subside)": lambda: TV_STACK(seg_tv),
            "tv:subside+map": lambda: tv_stack_subside(seg_tv),
            "tv:flatten+stack": lambda: tv_stack_flat(seg_tv)},
        "segment: train sample transpose": {
            "plain": lambda: tree_map(_transpose, stacked_plain),
            "tv:method": lambda: stacked_tv.transpose(0, 1),
            "tv:map": lambda: stacked_tv.map(_transpose)},
        # per collected batch
        "batch: cat segments' samples": {
            "plain": lambda: tree_cat(samples_plain),
            "tv:func(subside)": lambda: TV_CAT(samples_tv),
            "tv:flatten+cat": lambda: tv_cat_flat(samples_tv)},
        "batch: push flattens to columns": {
            "plain": lambda: flatten_tree(batch_plain),
            "tv:flatten": lambda: treevalue.flatten(batch_tv),
            "tv:to_dict+flatten": lambda: flatten_tree(tv_to_dict(batch_tv))},
        # per learner batch
        "learn: buffer rebuilds the batch": {
            "plain": lambda: _build(spec, cols),
            "tv:wrap": lambda: tv(_build(spec, cols)),
            "tv:unflatten": lambda: tv_unflatten(cols_paths, cols)},
        "learn: transpose to time-major": {
            "plain": lambda: tree_map(_transpose, learn_plain),
            "tv:method": lambda: learn_tv.transpose(0, 1),
            "tv:map": lambda: learn_tv.map(_transpose)},
        # for reference: the conversion a dict consumer needs
        "ref: FastTreeValue -> nested dict (batch)": {
            "tv": lambda: tv_to_dict(batch_tv)},
    }
    return ops


STEP_OPS = ["step: obs+next_obs -> tensor tree", "step: model reads obs leaves", "step: _process_transition tree"]
SEGMENT_OPS = ["segment: stack T transitions", "segment: train sample transpose"]
BATCH_OPS = ["batch: cat segments' samples", "batch: push flattens to columns"]
LEARN_OPS = ["learn: buffer rebuilds the batch", "learn: transpose to time-major"]


def time_ops(rounds: int, ms: float) -> Dict[str, Dict[str, Dict[str, Dict[str, float]]]]:
    """case -> op -> variant -> {median, q1, q3, ...} in us per call, all timers interleaved round by round."""
    timers: List[Tuple[str, str, str, Callable[[], float]]] = []
    for case in CASES:
        for op, variants in build_ops(case).items():
            for variant, fn in variants.items():
                timers.append((case, op, variant, per_call_us(fn, ms)[0]))
    samples: Dict[Tuple[str, str, str], List[float]] = {k[:3]: [] for k in timers}
    for r in range(rounds):
        order = timers if r % 2 == 0 else timers[::-1]  # neither variant always first
        for case, op, variant, timer in order:
            samples[(case, op, variant)].append(timer())
    out: Dict[str, Dict[str, Dict[str, Dict[str, float]]]] = {}
    for (case, op, variant), xs in samples.items():
        q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
        out.setdefault(case, {}).setdefault(op, {})[variant] = {
            "median_us": statistics.median(xs), "q1_us": q[0], "q3_us": q[2], "min_us": min(xs), "max_us": max(xs),
            "rounds": len(xs)}
    return out


# the treevalue way its documentation teaches, per op (the public API: no private storage constructor, no detour
# through flat leaf lists)
PUBLIC = {"step: obs+next_obs -> tensor tree": "tv:wrap FTV(dict)", "step: model reads obs leaves": "tv",
          "step: _process_transition tree": "tv FTV(dict)", "segment: stack T transitions": "tv:func(subside)",
          "segment: train sample transpose": "tv:method", "batch: cat segments' samples": "tv:func(subside)",
          "batch: push flattens to columns": "tv:flatten", "learn: buffer rebuilds the batch": "tv:unflatten",
          "learn: transpose to time-major": "tv:method"}


def best(variants: Dict[str, Dict[str, float]], prefix: str) -> Tuple[str, float]:
    """(variant, median) of the fastest variant whose name starts with ``prefix``."""
    name = min((v for v in variants if v.startswith(prefix)), key=lambda v: variants[v]["median_us"])
    return name, variants[name]["median_us"]


def summarise_case(ops: Dict[str, Dict[str, Dict[str, float]]]) -> Dict[str, Any]:
    """Per vector step / per segment / per batch / per learner batch sums, plain vs treevalue (fastest way)."""
    out: Dict[str, Any] = {"chosen_treevalue_way": {}}
    for variant in ("plain", "tv", "tv_public"):
        if variant == "tv_public":
            chosen = {op: (PUBLIC[op], ops[op][PUBLIC[op]]["median_us"]) for op in PUBLIC}
        else:
            chosen = {op: best(ops[op], variant) for op in STEP_OPS + SEGMENT_OPS + BATCH_OPS + LEARN_OPS}
        if variant == "tv":
            out["chosen_treevalue_way"] = {op: name for op, (name, _) in chosen.items()}
        step = sum(chosen[op][1] for op in STEP_OPS)
        segment = sum(chosen[op][1] for op in SEGMENT_OPS)
        batch = SEGMENTS * segment + sum(chosen[op][1] for op in BATCH_OPS)
        learn = sum(chosen[op][1] for op in LEARN_OPS)
        out[variant] = {"us_per_vector_step": step, "us_per_segment": segment, "us_per_collected_batch": batch,
                        "us_per_vector_step_amortised": step + batch / (SEGMENTS * T),
                        "us_per_learner_batch": learn}
    return out


# ---- the real collector ---------------------------------------------------------------------------------------------
def collector_comparison(repeats: int, seconds: float, only: Optional[List[str]] = None) -> Dict[str, Any]:
    """CartPole SampleCollector, plain vs with treevalue transitions/segments/samples, interleaved pairs."""
    from collector_throughput import Collect, make_policy, timed_rate, warm_up  # benchmarks/collector_throughput.py

    from ding_lite.worker import collector as collector_mod
    from ding_lite.worker.collector import SampleCollector, _to_cpu

    # the collector module is changing (nested observations): take its conversions by whichever name it has
    to_tensor = getattr(collector_mod, "obs_to_tensor", None) or getattr(collector_mod, "obs_tensor")
    final_obs = getattr(collector_mod, "replace_final_obs", None) or getattr(collector_mod, "true_next_obs")

    class CopyCollector(SampleCollector):
        """``SampleCollector.step``/``collect`` copied here (IMPALA's hooks inlined: the transition with ``logit``,
        the 'full'-storage train sample, a transpose), with the tree work done by ``make``, ``stack``, ``transpose``,
        ``cat`` and ``out``. With the plain helpers it should run as fast as the library's collector (checked: the
        'plain copy' row); with treevalue's it is the treevalue variant."""

        make: Callable = staticmethod(transition_plain)
        stack: Callable = staticmethod(tree_stack)
        cat: Callable = staticmethod(tree_cat)
        out: Callable = staticmethod(lambda x: x)

        @staticmethod
        def transpose(segment: Any) -> Any:
            return tree_map(_transpose, segment)

        def step(self, **policy_kwargs: Any) -> Any:
            obs = to_tensor(self._obs)
            output = self.policy.forward(obs, **policy_kwargs)
            next_obs, reward, terminated, truncated, info = self.env.step(self._env_action(output["action"]))
            self.envstep += self.num_envs
            done = terminated | truncated
            self._finite.step(next_obs, reward, done, info, self.envstep)
            timestep = {
                "next_obs": to_tensor(final_obs(next_obs, done, info)),
                "reward": torch.from_numpy(reward).float(),
                "terminated": torch.from_numpy(terminated),
                "truncated": torch.from_numpy(truncated),
            }
            output = tree_map(_to_cpu, output)
            self._segment.append(self.make(obs, timestep["next_obs"], output, timestep))
            self.episodes.step(reward, done)
            self._obs = next_obs
            if len(self._segment) < self.unroll_len:
                return None
            segment = self.stack(self._segment)
            self._segment = []
            return self.transpose(segment)

        def collect(self, n_sample: int, **policy_kwargs: Any) -> Dict[str, torch.Tensor]:
            batches, count = [], 0
            while count < n_sample:
                samples = self.step(**policy_kwargs)
                if samples is not None:
                    batches.append(samples)
                    count += samples["reward"].shape[0]
            return self.out(batches[0] if len(batches) == 1 else self.cat(batches))

    class TreeValueCollector(CopyCollector):
        """The transition, segment and train sample as FastTreeValue, each op done the fastest treevalue way measured
        above (the storage constructor, stacking through flat leaf lists); the collected batch goes back as nested
        dicts (what the buffer's push and the learner take)."""

        make = staticmethod(transition_tv)
        stack = staticmethod(tv_stack_flat)
        cat = staticmethod(tv_cat_flat)
        out = staticmethod(tv_to_dict)

        @staticmethod
        def transpose(segment: Any) -> Any:
            return segment.map(_transpose)

    class PublicTreeValueCollector(TreeValueCollector):
        """The same through treevalue's documented API: ``FastTreeValue(dict)``, ``func(subside=True)`` stack/cat,
        the broadcast method ``.transpose``."""

        make = staticmethod(lambda obs, next_obs, out, ts: FastTreeValue(transition_plain(obs, next_obs, out, ts)))
        stack = staticmethod(TV_STACK)
        cat = staticmethod(TV_CAT)

        @staticmethod
        def transpose(segment: Any) -> Any:
            return segment.transpose(0, 1)

    policy, source = make_policy(N_ENV)
    runs = {"library": Collect(policy, N_ENV, N_ENV * SEGMENTS, "base", seed=0),
            "plain_copy": Collect(policy, N_ENV, N_ENV * SEGMENTS, "base", seed=0),
            "treevalue": Collect(policy, N_ENV, N_ENV * SEGMENTS, "base", seed=0),
            "treevalue_public": Collect(policy, N_ENV, N_ENV * SEGMENTS, "base", seed=0)}
    runs["plain_copy"].collector.__class__ = CopyCollector
    runs["treevalue"].collector.__class__ = TreeValueCollector
    runs["treevalue_public"].collector.__class__ = PublicTreeValueCollector
    for name in list(runs):
        if only and name != "library" and name not in only:
            runs.pop(name).close()
    shapes = {}
    for name, run in runs.items():  # the same structure out of every variant
        batch = run.collector.collect(N_ENV * SEGMENTS)
        shapes[name] = {k: tuple(v.shape) for k, v in flatten_tree(batch)}
    assert all(v == shapes["library"] for v in shapes.values()), f"variants disagree: {shapes}"
    for run in runs.values():
        warm_up(run.chunk, 0.5)
    rates: Dict[str, List[float]] = {k: [] for k in runs}
    cpu_rates: Dict[str, List[float]] = {k: [] for k in runs}
    ratios: Dict[str, List[float]] = {k: [] for k in runs if k != "library"}
    cpu_ratios: Dict[str, List[float]] = {k: [] for k in runs if k != "library"}
    names = list(runs)
    for r in range(repeats):
        order = names[r % len(names):] + names[:r % len(names)]  # rotate: no variant always first
        got = {name: timed_rate(runs[name].chunk, seconds) for name in order}
        for name in runs:
            rates[name].append(got[name]["steps_per_s"])
            cpu_rates[name].append(got[name]["steps_per_cpu_s"])
        for name in ratios:
            ratios[name].append(got[name]["steps_per_s"] / got["library"]["steps_per_s"])
            cpu_ratios[name].append(got[name]["steps_per_cpu_s"] / got["library"]["steps_per_cpu_s"])
    for run in runs.values():
        run.close()
    med = {k: statistics.median(v) for k, v in rates.items()}
    return {"policy_config": source, "env_id": "CartPole-v1", "envs": N_ENV, "unroll_len": T,
            "n_sample": N_ENV * SEGMENTS, "seconds": seconds, "repeats": repeats, "torch_threads": 1,
            "env_steps_per_s": rates, "median_env_steps_per_s": med,
            "us_per_vector_step": {k: N_ENV / v * 1e6 for k, v in med.items()},
            "paired_ratios_over_library": ratios,
            "median_paired_ratio": {k: statistics.median(v) for k, v in ratios.items()},
            "paired_ratio_range": {k: [min(v), max(v)] for k, v in ratios.items()},
            "env_steps_per_cpu_s": cpu_rates,
            "median_env_steps_per_cpu_s": {k: statistics.median(v) for k, v in cpu_rates.items()},
            "paired_cpu_ratios_over_library": cpu_ratios,
            "median_paired_cpu_ratio": {k: statistics.median(v) for k, v in cpu_ratios.items()},
            "paired_cpu_ratio_range": {k: [min(v), max(v)] for k, v in cpu_ratios.items()}}


# ---- import cost ----------------------------------------------------------------------------------------------------
def import_cost(runs: int) -> Dict[str, Any]:
    """``import treevalue`` in fresh interpreters: cold (it imports torch itself) and after torch; its warnings."""
    code = ("import time, warnings, sys\n"
            "{pre}\n"
            "warnings.simplefilter('always')\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    t = time.perf_counter(); import treevalue; dt = time.perf_counter() - t\n"
            "print(dt); print(len(w)); print(sorted({{f'{{x.category.__name__}}: {{x.message}}' for x in w}}))")
    out: Dict[str, Any] = {}
    for name, pre in (("cold_s", "pass"), ("after_torch_s", "import torch")):
        times, warns = [], None
        for _ in range(runs):
            res = subprocess.run([sys.executable, "-c", code.format(pre=pre)], capture_output=True, text=True,
                                 check=True)
            lines = res.stdout.strip().splitlines()
            times.append(float(lines[0]))
            warns = {"count": int(lines[1]), "messages": eval(lines[2])}  # noqa: S307 (our own repr)
        out[name] = statistics.median(times)
        out[name + "_runs"] = times
        out["warnings"] = warns
    return out


# ---- report ---------------------------------------------------------------------------------------------------------
def report(res: Dict[str, Any]) -> str:
    lines = []
    m = res["machine"]
    lines.append(f"treevalue {treevalue.__version__}, torch {m['torch']}; {m['cpu_model']}, {m['cpus_usable']} CPUs; "
                 f"{N_ENV} envs, T={T}, {SEGMENTS} segments per collected batch, learner batch {LEARN_B}, 1 thread")
    lines.append(f"medians of {res['setup']['rounds']} interleaved rounds; [q1-q3] across rounds is the noise")
    for case, title in CASES.items():
        ops = res["ops"][case]
        lines.append(f"\n{case}: {title}")
        lines.append(f"  {'op (us per call)':<40}{'plain':>22}{'treevalue (fastest way)':>40}{'tv/plain':>9}"
                     f"{'public API':>12}")
        for op in STEP_OPS + SEGMENT_OPS + BATCH_OPS + LEARN_OPS:
            p = ops[op]["plain"]
            name, _ = best(ops[op], "tv")
            t = ops[op][name]
            lines.append(f"  {op:<40}{p['median_us']:>8.1f} [{p['q1_us']:>5.1f}-{p['q3_us']:>5.1f}]"
                         f"{t['median_us']:>10.1f} [{t['q1_us']:>5.1f}-{t['q3_us']:>5.1f}] {name:<17}"
                         f"{t['median_us'] / p['median_us']:>8.1f}x{ops[op][PUBLIC[op]]['median_us']:>12.1f}")
        conv = ops["ref: FastTreeValue -> nested dict (batch)"]["tv"]["median_us"]
        lines.append(f"  (FastTreeValue -> nested dicts of a collected batch, for a dict consumer: {conv:.1f} us)")
    lines.append("\nsums in us, plain / treevalue fastest ways / treevalue public API: per vector step (step ops + "
                 "collected-batch ops / (2 T)), per collected batch (2 segments + cat + push), per learner batch")
    step_us = res.get("collector", {}).get("us_per_vector_step", {}).get("library")
    lines.append(f"  {'case':<10}{'per vector step':>26}{'per collected batch':>26}{'per learner batch':>22}"
                 + (f"{'% of a CartPole collector step':>34}" if step_us else ""))
    for case in CASES:
        s = res["summary"][case]
        v = [s[k] for k in ("plain", "tv", "tv_public")]
        step = " / ".join(f"{x['us_per_vector_step_amortised']:.1f}" for x in v)
        batch = " / ".join(f"{x['us_per_collected_batch']:.0f}" for x in v)
        learn = " / ".join(f"{x['us_per_learner_batch']:.1f}" for x in v)
        row = f"  {case:<10}{step:>26}{batch:>26}{learn:>22}"
        if step_us:
            share = " / ".join(f"{100 * x['us_per_vector_step_amortised'] / step_us:.1f}" for x in v)
            row += f"{share:>30} %"
        lines.append(row)
    if "collector" in res:
        c = res["collector"]
        med, us = c["median_env_steps_per_s"], c["us_per_vector_step"]
        lines.append(f"\nreal CartPole collector ({c['policy_config']}), {c['repeats']} interleaved rounds of "
                     f"{c['seconds']:g} s per variant:")
        labels = {"library": "ding_lite SampleCollector (plain dicts)", "plain_copy": "its step copied, plain dicts",
                  "treevalue": "its step copied, FastTreeValue (fastest ways)",
                  "treevalue_public": "its step copied, FastTreeValue (public API)"}
        for name, label in labels.items():
            if name not in med:
                continue
            ratio = ""
            if name in c["median_paired_ratio"]:
                lo, hi = c["paired_ratio_range"][name]
                clo, chi = c["paired_cpu_ratio_range"][name]
                ratio = (f"  / library: wall {c['median_paired_ratio'][name]:.3f} ({lo:.3f}-{hi:.3f}), "
                         f"CPU {c['median_paired_cpu_ratio'][name]:.3f} ({clo:.3f}-{chi:.3f})")
            lines.append(f"  {label:<48}{med[name]:>9,.0f} env steps/s {us[name]:>7.1f} us/vector step{ratio}")
        lines.append("  (ratios: median of the per-round ratios of env steps per second of wall time and of this "
                     "process's CPU time, which other processes on the machine hardly change, (min-max); the "
                     "issue's bound for CartPole: >= 0.97)")
    if "import" in res:
        i = res["import"]
        w = i["warnings"]
        lines.append(f"\nimport treevalue (fresh interpreters, median of {len(i['cold_s_runs'])}): cold "
                     f"{i['cold_s']:.2f} s (it imports torch), after torch {1000 * i['after_torch_s']:.0f} ms; "
                     f"{w['count']} warnings: {'; '.join(w['messages'])}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds of every op timer (default 15)")
    parser.add_argument("--ms", type=float, default=20.0, help="ms per op timer per round (default 20)")
    parser.add_argument("--repeats", type=int, default=40, help="collector rounds, every variant once per "
                        "round (default 40)")
    parser.add_argument("--seconds", type=float, default=0.5, help="seconds per collector run (default 0.5: short "
                        "runs side by side see the same load; many rounds then give a steady median)")
    parser.add_argument("--collectors", nargs="*", default=None,
                        choices=["plain_copy", "treevalue", "treevalue_public"],
                        help="collector variants to run beside the library's (default: all)")
    parser.add_argument("--quick", action="store_true", help="a short check: 3 rounds of 5 ms, 2 collector pairs "
                        "of 0.5 s, 1 import run; writes no results unless --output is given")
    parser.add_argument("--output", default=None, help=f"results JSON (default {os.path.relpath(RESULT, ROOT)}; "
                        "the printed table goes to the same name with .txt)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.ms, args.repeats, args.seconds = 3, 5.0, 2, 0.5
    output = args.output or (None if args.quick else RESULT)
    torch.set_num_threads(1)
    start = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    res: Dict[str, Any] = {
        "setup": {"envs": N_ENV, "T": T, "segments_per_batch": SEGMENTS, "learner_batch": LEARN_B,
                  "rounds": args.rounds, "ms_per_timer": args.ms, "torch_threads": 1, "cases": CASES,
                  "treevalue": treevalue.__version__},
        "machine": dict(machine_info(torch=torch.__version__, numpy=np.__version__), loadavg_1min_before=load)}
    res["import"] = import_cost(1 if args.quick else 5)
    res["ops"] = time_ops(args.rounds, args.ms)
    res["summary"] = {case: summarise_case(res["ops"][case]) for case in CASES}
    with redirect_stdout(io.StringIO()):
        res["collector"] = collector_comparison(args.repeats, args.seconds, args.collectors)
    res["machine"]["loadavg_1min_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    text = report(res)
    print(text)
    res["wall_s"] = time.perf_counter() - start
    if output:
        atomic_write_json(res, output)
        with open(os.path.splitext(output)[0] + ".txt", "w") as f:
            f.write(text + "\n")
        print(f"wrote {os.path.relpath(output, ROOT)} and .txt ({res['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()

"""The ``parallel`` config section: how many collectors, how often weights flow, how stale a sample may be."""
import os

from easydict import EasyDict

from ding_lite.utils import Configurable, ConfigError

INF = float("inf")
BACKENDS = ("local", "ray")


class ParallelConfig(Configurable):
    """Settings of ``-m parallel`` (top-level section ``parallel``); the serial pipeline ignores them."""

    config = dict(
        # (int) Collector processes (Ray actors with backend 'ray'); None: CPU cores - 1, at least 1.
        collector_num=None,
        # (bool) Synchronous collection: each collector acts one segment with the current weights, then waits for
        # the next version; the learner makes the updates a round of segments allows, then publishes once, so no
        # sample acted with old weights is trained on (max_staleness 0). None: the policy's on_policy flag (PPO).
        # A round (collector_num x env.collector_env_num samples) must be policy.collect.n_sample.
        sync=None,
        # (int) The learner publishes its weights (a new version) every this many train iterations.
        weight_sync_freq=1,
        # (int or inf) Segments collected with weights more than this many versions older than the learner's are
        # dropped on arrival (the buffer's own max_staleness, in train iterations, still applies after that).
        max_staleness=INF,
        # (int) Segments (the message unit: collector_env_num unrolls) the collectors together may have under way
        # (being collected, or sent and not yet taken for training); beyond that they wait (backpressure), which
        # bounds the policy lag. None: collector_num (one segment per collector).
        queue_size=None,
        # (int) Backend 'ray' only: segments each collect call returns. More than 1 sends fewer messages per env
        # step (each a round trip through Ray's processes) at the price of policy lag: all segments of a call act
        # with the weights the call carried. See docs/parallel.md.
        segments_per_call=1,
        # (int) Times a crashed worker (collector or evaluator) is restarted before the run fails.
        max_restarts=10,
        # (str) 'local': spawned processes on this machine. 'ray': Ray actors (needs the extra: pip install
        # ding_lite[ray]), on a local Ray instance or the cluster at ray_address.
        backend="local",
        # (str) Address of a running Ray cluster for ray.init (e.g. '10.0.0.1:6379' or 'auto'); None starts a
        # private local Ray instance for this run, even when another Ray cluster runs on this machine.
        ray_address=None,
        # (float) Seconds the run goes on with no collector running (all lost with their nodes, or none placeable
        # on the Ray cluster) before it stops with an error. Workers that can run are restarted meanwhile.
        collector_wait_s=120.0,
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        n = cfg.collector_num
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ConfigError(f"{path}.collector_num={n!r}: must be an int >= 1, or None for CPU cores - 1")
        for key in ("weight_sync_freq", "queue_size", "segments_per_call"):
            value = cfg[key]
            if key == "queue_size" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{path}.{key}={value!r}: must be an int >= 1")
        if cfg.sync is not None and not isinstance(cfg.sync, bool):
            raise ConfigError(f"{path}.sync={cfg.sync!r}: must be True, False or None (the policy's on_policy flag)")
        stale = cfg.max_staleness
        if isinstance(stale, bool) or not isinstance(stale, (int, float)) or not stale >= 0:
            raise ConfigError(f"{path}.max_staleness={stale!r}: must be >= 0 (weight versions) or float('inf')")
        if isinstance(cfg.max_restarts, bool) or not isinstance(cfg.max_restarts, int) or cfg.max_restarts < 0:
            raise ConfigError(f"{path}.max_restarts={cfg.max_restarts!r}: must be an int >= 0")
        wait = cfg.collector_wait_s
        if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not wait > 0:
            raise ConfigError(f"{path}.collector_wait_s={wait!r}: must be a number of seconds > 0")
        if cfg.backend not in BACKENDS:
            raise ConfigError(f"{path}.backend={cfg.backend!r}: must be one of {', '.join(map(repr, BACKENDS))}")
        if cfg.segments_per_call != 1 and cfg.backend != "ray":
            raise ConfigError(f"{path}.segments_per_call={cfg.segments_per_call}: only the Ray backend sends several "
                              f"segments per call; set {path}.backend='ray' (--backend ray) or leave it at 1")
        if cfg.ray_address is not None and not isinstance(cfg.ray_address, str):
            raise ConfigError(f"{path}.ray_address={cfg.ray_address!r}: must be an address string such as "
                              f"'10.0.0.1:6379' or 'auto', or None for a local Ray instance")


def default_collector_num() -> int:
    """CPU cores minus one for the learner, at least one."""
    return max(1, (os.cpu_count() or 1) - 1)


def resolve_sync(cfg: EasyDict) -> None:
    """Resolve ``parallel.sync`` (None: ``policy.on_policy``) and, when on, ``parallel.max_staleness`` (to 0); refuse
    with one line a config whose synchronous rounds cannot work. ``parallel.collector_num`` must be resolved."""
    pcfg, policy = cfg.parallel, cfg.policy
    if pcfg.sync is None:
        pcfg.sync = bool(policy.on_policy)
    if not pcfg.sync:
        if policy.on_policy:
            raise ConfigError(f"parallel.sync=False: policy '{policy.type}' is on-policy (it trains only on samples of "
                              f"its current weights) and needs synchronous collection; remove the key")
        return
    why = "synchronous collection (parallel.sync) trains only on segments acted with the current weights"
    if pcfg.max_staleness not in (0, INF):
        raise ConfigError(f"parallel.max_staleness={pcfg.max_staleness!r}: {why}; remove the key or set 0")
    pcfg.max_staleness = 0
    if pcfg.weight_sync_freq != 1:
        raise ConfigError(f"parallel.weight_sync_freq={pcfg.weight_sync_freq}: synchronous collection (parallel.sync) "
                          f"publishes once per round of segments; remove the key")
    if pcfg.segments_per_call != 1:
        raise ConfigError(f"parallel.segments_per_call={pcfg.segments_per_call}: a synchronous round (parallel.sync) "
                          f"is one segment per collector; remove the key")
    n_sample, envs, collectors = policy.collect.n_sample, cfg.env.collector_env_num, pcfg.collector_num
    if collectors * envs != n_sample:
        fixes = [f"env.collector_env_num={n_sample // collectors}"] if n_sample % collectors == 0 else []
        fixes += [f"parallel.collector_num={n_sample // envs}"] if n_sample % envs == 0 else []
        fix = " or ".join(fixes) or f"policy.collect.n_sample to a multiple of env.collector_env_num={envs}"
        raise ConfigError(f"policy.collect.n_sample={n_sample}: a synchronous round (parallel.sync) is one segment "
                          f"per collector, parallel.collector_num={collectors} x env.collector_env_num={envs} = "
                          f"{collectors * envs} samples, and must be one collection; set {fix}")

"""The Policy base class: one object, three modes (learn, collect, eval) handed to the workers, and two hooks.

Unlike DI-engine, hooks see batched tensors: ``_process_transition`` is called once per vector-env step with every
env's data stacked (leading dim = env), and ``_get_train_sample`` once per finished segment of ``unroll_len`` steps
with time-major tensors ``(T, N_env, ...)``. That keeps per-env Python loops out of the collection hot path.
"""
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from easydict import EasyDict

from ding_lite.torch_utils.lr_schedule import LRScheduler, parse_lr_scheduler
from ding_lite.torch_utils.obs_norm import ObsNormalizer, make_obs_normalizer
from ding_lite.torch_utils.tree import tree_map
from ding_lite.utils import MODEL_REGISTRY, Configurable, ConfigError, UserError, import_modules


@dataclass(frozen=True)
class LearnMode:
    """What the learner calls: ``forward(batch) -> dict of scalars``, checkpoint state and the names it logs."""

    forward: Callable[[Dict[str, Any]], Dict[str, float]]
    state_dict: Callable[[], Dict[str, Any]]
    load_state_dict: Callable[[Dict[str, Any]], None]
    monitor_vars: Callable[[], List[str]]
    # ``set_counters(train_iter, env_step)`` before each update: sets the learning rates of the policy's schedule
    # (``policy.learn.lr_scheduler``). None when the rates are constant, so nothing runs per update.
    set_counters: Optional[Callable[[int, int], None]] = None


@dataclass(frozen=True)
class CollectMode:
    """What the collector calls: batched ``forward``, the two hooks, ``reset`` and the segment length."""

    forward: Callable[..., Dict[str, Any]]
    process_transition: Callable[..., Dict[str, torch.Tensor]]
    get_train_sample: Callable[[Dict[str, torch.Tensor]], Dict[str, torch.Tensor]]
    reset: Callable[[Optional[Sequence[int]]], None]
    unroll_len: int
    action_bound: str = "clip"


@dataclass(frozen=True)
class EvalMode:
    """What the evaluator calls: batched ``forward`` returning a deterministic ``action``, and ``reset``."""

    forward: Callable[[torch.Tensor], Dict[str, Any]]
    reset: Callable[[Optional[Sequence[int]]], None]
    action_bound: str = "clip"


def check_cuda(cuda: bool) -> None:
    """``policy.cuda=True`` needs a CUDA device torch can see: a UserError with the fix otherwise. The pipelines call
    it right after compiling the config, before any env is built; the policy again when it picks its device."""
    if cuda and not torch.cuda.is_available():
        raise UserError("policy.cuda=True but torch sees no CUDA device; set policy.cuda=False "
                        "(--set policy.cuda=False) or install a CUDA build of torch")


class Policy(Configurable):
    """Base class of every policy. Subclasses set ``config``, ``default_model`` and the ``_init_*``/``_forward_*``
    methods; ``_process_transition`` and ``_get_train_sample`` decide what a step stores and how it trains.
    """

    # How continuous actions meet the env's Box bounds (see ding_lite.envs.action_adapter): 'clip' for actions in env
    # units, 'rescale' for actions in [-1, 1] (tanh-squashed policies).
    action_bound = "clip"
    # Prioritised replay (policy.priority): a policy that supports it returns a per-sample ``priority`` (B,) tensor,
    # |TD error| >= 0, in its learn step's info, and weights its loss by the batch's ``weight`` (B,) when
    # policy.priority_IS_weight is on. ``priority_refusal``: why a policy refuses it (shown in the ConfigError).
    supports_priority = False
    priority_refusal = ""
    # Action masks (an env's Dict observation with an ``env.action_mask_key`` entry): a policy that supports them
    # acts, evaluates and learns with the mask (``ding_lite/policy/action_mask.py``); the others are refused.
    supports_action_mask = False

    config = dict(
        # (str) POLICY_REGISTRY name (set from create_config.policy.type).
        type=None,
        # (list) Modules imported before the lookup of ``type`` (so user policies can register themselves).
        import_names=[],
        # (bool) Put the model and training on the GPU. Needs a CUDA device.
        cuda=False,
        # (bool) Whether the algorithm is on-policy: -m parallel then collects synchronously (parallel.sync, None).
        on_policy=False,
        # (bool) Prioritised replay (Schaul et al. 2016): sample by |TD error|^priority_alpha (keys in
        # policy.other.replay_buffer). SAC, discrete SAC and ACER support it; see docs/configs.md.
        priority=False,
        # (bool) Importance-sampling weights for prioritised replay: the critic's loss of each sample is weighted by
        # (N P(i))^-beta / max_j (N P(j))^-beta. Needs priority=True.
        priority_IS_weight=False,
        # (str) Action space of the env: 'auto' reads it from the env; or 'discrete', 'continuous', 'multi_discrete',
        # 'mixed' (Tuple(Discrete, Box)).
        action_space="auto",
        # (str) The key of the action mask in the env's Dict observation, filled by the pipeline from
        # env.action_mask_key when the env's observation has it (None: no mask). Not an input of the model: the mask
        # travels beside the observation (transitions, unrolls, the buffer) and masks the logits.
        action_mask_key=None,
        # (int) Length T of the time-major segments the collector hands to ``_get_train_sample``.
        unroll_len=1,
        model=dict(),
        learn=dict(
            # (int) Learner updates after each collection (serial pipeline).
            update_per_collect=1,
            # (int) Train samples per update.
            batch_size=64,
            # (float) Discount factor gamma.
            discount_factor=0.99,
            # (dict) Learning-rate schedule of every optimiser of the policy, e.g. dict(type='cosine',
            # over='env_step', steps=100000, min_lr_ratio=0.1): each rate is its base times a multiplier that falls
            # from 1 at 0 to min_lr_ratio at steps ('linear' or 'cosine'), then stays. None: constant rates.
            lr_scheduler=None,
        ),
        collect=dict(
            # (int) Train samples to collect per collection (rounded up to a multiple of collector_env_num).
            n_sample=64,
        ),
        eval=dict(),
        other=dict(),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        if cfg.priority_IS_weight and not cfg.priority:
            raise ConfigError(f"{path}.priority_IS_weight=True needs {path}.priority=True (importance weights correct "
                              f"for prioritised sampling); set both, or priority_IS_weight=False")
        if cfg.priority and not cls.supports_priority:
            reason = cls.priority_refusal or "its learn step returns no per-sample priorities"
            raise ConfigError(f"{path}.priority=True: policy '{cfg.type}' does not support prioritised replay "
                              f"({reason}); set {path}.priority=False and {path}.priority_IS_weight=False")
        if cfg.action_space not in ("auto", "discrete", "continuous", "multi_discrete", "mixed"):
            raise ConfigError(f"{path}.action_space='{cfg.action_space}': must be one of 'auto', 'discrete', "
                              f"'continuous', 'multi_discrete', 'mixed'")
        for key in ("update_per_collect", "batch_size"):
            if cfg.learn[key] < 1:
                raise ConfigError(f"{path}.learn.{key}={cfg.learn[key]}: must be at least 1")
        if not 0 <= cfg.learn.discount_factor <= 1:
            raise ConfigError(f"{path}.learn.discount_factor={cfg.learn.discount_factor}: must be in [0, 1]")
        if cfg.unroll_len < 1 or cfg.collect.n_sample < 1:
            raise ConfigError(f"{path}.unroll_len and {path}.collect.n_sample must be at least 1")
        parse_lr_scheduler(cfg.learn.get("lr_scheduler"), f"{path}.learn.lr_scheduler")

    def __init__(self, cfg: EasyDict, model: Optional[torch.nn.Module] = None,
                 enable_field: Sequence[str] = ("learn", "collect", "eval")) -> None:
        self._cfg = cfg
        self._cuda = bool(cfg.cuda)
        self._device = self._select_device()
        if model is None:
            model = self._create_model(cfg.model)
        self._model = model.to(self._device)
        self._setup_model()
        self._obs_norm = self._attach_obs_normalizer()
        self._enable_field = tuple(enable_field)
        for field in self._enable_field:
            getattr(self, f"_init_{field}")()
        self._lr_scheduler: Optional[LRScheduler] = None
        if "learn" in self._enable_field:
            self._init_lr_scheduler()

    def _select_device(self) -> torch.device:
        """The device of the model and of every tensor the modes make: 'cuda' with ``policy.cuda``, else 'cpu'.
        (The device-cleanliness tests replace it with a stand-in device.)"""
        check_cuda(self._cuda)
        return torch.device("cuda" if self._cuda else "cpu")

    def default_model(self) -> Tuple[str, List[str]]:
        """The MODEL_REGISTRY name and import_names of the model this policy builds when none is given."""
        raise NotImplementedError

    def _create_model(self, model_cfg: EasyDict) -> torch.nn.Module:
        model_type, import_names = self.default_model()
        model_type = model_cfg.type or model_type
        import_modules(list(import_names) + list(model_cfg.import_names), "policy.model.import_names")
        kwargs = {k: v for k, v in model_cfg.items() if k not in ("type", "import_names")}
        return MODEL_REGISTRY.build(model_type, **kwargs)

    def _setup_model(self) -> None:
        """Called once on the built or given model, before any mode is initialised, whatever the modes: attach
        the policy's own state that must travel with ``model.state_dict()`` (published to parallel workers, loaded
        by ``-m eval``). The default attaches nothing."""

    def _attach_obs_normalizer(self) -> Optional[ObsNormalizer]:
        """``model.obs_normalizer`` (``env.normalize_obs``: the float leaves marked in ``policy.model.obs_space``), so
        that its statistics travel with ``model.state_dict()``; None when nothing is normalised. A model that already
        has one (a copy of a model set up here) keeps its own."""
        existing = getattr(self._model, "obs_normalizer", None)
        if existing is not None:
            return existing
        norm = make_obs_normalizer(self._cfg.model.obs_space if "obs_space" in self._cfg.model else None)
        if norm is not None:
            self._model.add_module("obs_normalizer", norm.to(self._device))
        return norm

    def update_obs_stats(self, samples: Dict[str, Any]) -> None:
        """Merge the observations of a batch of train samples (``samples['obs']``, any leading dims) into the
        normalisation statistics; nothing without ``env.normalize_obs``. Called where samples reach the learner's
        buffer, never in evaluation."""
        if self._obs_norm is not None:
            self._obs_norm.update(samples["obs"])

    def _normalized(self, obs: Any) -> Any:
        """Observations as the model takes them: normalised with the running statistics when they are kept."""
        return obs if self._obs_norm is None else self._obs_norm(obs)

    def checkpoint_model_state(self, policy_state: Dict[str, Any]) -> Dict[str, Any]:
        """The model's state dict from a learn-mode state (a checkpoint's ``policy`` entry), brought up to date
        when an older checkpoint kept part of the model's state elsewhere. The default returns ``model``."""
        return policy_state["model"]

    # ---- modes -------------------------------------------------------------------------------------------------
    @property
    def learn_mode(self) -> LearnMode:
        set_counters = None if self._lr_scheduler is None else self._set_learn_counters
        return LearnMode(self._forward_learn, self._state_dict_learn, self._load_state_dict_learn,
                         self._monitor_vars_learn, set_counters)

    @property
    def collect_mode(self) -> CollectMode:
        return CollectMode(self._forward_collect, self._process_transition, self._get_train_sample,
                           self._reset_collect, int(self._cfg.unroll_len), self.action_bound)

    @property
    def eval_mode(self) -> EvalMode:
        return EvalMode(self._forward_eval, self._reset_eval, self.action_bound)

    @property
    def model(self) -> torch.nn.Module:
        return self._model

    @property
    def device(self) -> torch.device:
        return self._device

    def _on_device(self, obs: Any) -> Any:
        """Observations (a tensor, or a nested dict of tensors for a Dict/Tuple space) on the policy's device, and
        normalised when ``env.normalize_obs`` is on: what acting feeds the model."""
        return self._normalized(tree_map(lambda x: x.to(self._device), obs))

    @property
    def cfg(self) -> EasyDict:
        return self._cfg

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        raise NotImplementedError

    def _forward_learn(self, data: Dict[str, Any]) -> Dict[str, float]:
        raise NotImplementedError

    def _optimizers(self) -> List[torch.optim.Optimizer]:
        """Every optimiser of the learn mode (the learning-rate schedule scales each of their parameter groups).
        The default is ``self._optimizer`` if there is one; override it when a policy has others."""
        optimizer = getattr(self, "_optimizer", None)
        return [] if optimizer is None else [optimizer]

    def _init_lr_scheduler(self) -> None:
        """After ``_init_learn``: the schedule of ``policy.learn.lr_scheduler`` over ``_optimizers()``, whose current
        rates (the configured ones) are its base rates. None (nothing runs per update) for a constant rate."""
        schedule = parse_lr_scheduler(self._cfg.learn.get("lr_scheduler"), "policy.learn.lr_scheduler")
        if schedule is None:
            return
        optimizers = self._optimizers()
        if not optimizers:
            raise UserError(f"policy.learn.lr_scheduler is set, but policy {type(self).__name__} has no "
                            f"self._optimizer; override its _optimizers() to return the optimisers to schedule")
        self._lr_scheduler = LRScheduler(schedule, optimizers)

    def _set_learn_counters(self, train_iter: int, env_step: int) -> None:
        """Set the learning rates for the update that takes ``train_iter`` to ``train_iter + 1``."""
        if self._lr_scheduler is not None:
            self._lr_scheduler.step(train_iter, env_step)

    def _state_dict_learn(self) -> Dict[str, Any]:
        return {"model": self._model.state_dict(), "optimizer": self._optimizer.state_dict()}

    def _load_state_dict_learn(self, state: Dict[str, Any]) -> None:
        self._model.load_state_dict(self.checkpoint_model_state(state))
        self._optimizer.load_state_dict(state["optimizer"])

    def _monitor_vars_learn(self) -> List[str]:
        return ["cur_lr", "total_loss"]

    # ---- collect -----------------------------------------------------------------------------------------------
    def _init_collect(self) -> None:
        pass

    def _forward_collect(self, obs: torch.Tensor, **kwargs: Any) -> Dict[str, Any]:
        raise NotImplementedError

    def _process_transition(self, obs: torch.Tensor, policy_output: Dict[str, Any],
                            timestep: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """One vector step -> one batched transition (leading dim = env). ``timestep`` holds ``next_obs`` (the true
        final observation where an episode ended), ``reward``, ``terminated`` and ``truncated``.

        The default stores what every value-based target needs; override it to store more (or less)."""
        return {
            "obs": obs,
            "next_obs": timestep["next_obs"],
            "action": policy_output["action"],
            "reward": timestep["reward"],
            "terminated": timestep["terminated"],
            "truncated": timestep["truncated"],
        }

    def _get_train_sample(self, segment: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """A time-major segment ``(T, N_env, ...)`` -> a batch of train samples with a leading sample dim."""
        raise NotImplementedError

    def _reset_collect(self, env_ids: Optional[Sequence[int]] = None) -> None:
        pass

    # ---- eval --------------------------------------------------------------------------------------------------
    def _init_eval(self) -> None:
        pass

    def _forward_eval(self, obs: torch.Tensor) -> Dict[str, Any]:
        raise NotImplementedError

    def _reset_eval(self, env_ids: Optional[Sequence[int]] = None) -> None:
        pass

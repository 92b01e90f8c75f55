"""Learning-rate schedules on every policy's optimisers (issue 31 item 4): after real updates through the Learner,
each parameter group's rate is its configured base times the multiplier of the last update's counters (hand-worked
values here); the logged cur_lr keys say the same; None and 'constant' change nothing (bit-identical weights, no
per-update call); a learn state loaded into a fresh policy continues the schedule at the restored counters."""
import copy
import os

import pytest
import torch

from ding_lite.config import read_config_file
from ding_lite.data import ReplayBuffer
from ding_lite.entry.build import build, compile_input
from ding_lite.utils import set_seed
from ding_lite.worker import Learner, SampleCollector

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dizoo_configs")
SMALL = {"env.collector_env_num": 2, "env.evaluator_env_num": 1, "env.n_evaluator_episode": 1,
         "policy.learn.batch_size": 8}
# policy case -> (config, distinct base rates per learning-rate key, the logged key of each, optimiser groups' bases)
CASES = {
    "impala": ("cartpole_impala", {"learning_rate": 1e-3}, {"cur_lr": 1e-3}, [[1e-3]]),
    "acer": ("cartpole_acer", {"learning_rate_actor": 1e-3, "learning_rate_critic": 4e-4},
             {"cur_lr_actor": 1e-3, "cur_lr_critic": 4e-4}, [[1e-3], [4e-4]]),
    "sac": ("pendulum_sac", {"learning_rate_q": 1e-3, "learning_rate_policy": 3e-4, "learning_rate_alpha": 2e-4},
            {"cur_lr_q": 1e-3, "cur_lr_policy": 3e-4, "cur_lr_alpha": 2e-4}, [[1e-3, 2e-4, 3e-4]]),
    "discrete_sac": ("cartpole_sac", {"learning_rate_q": 1e-3, "learning_rate_policy": 3e-4,
                                      "learning_rate_alpha": 2e-4},
                     {"cur_lr_q": 1e-3, "cur_lr_policy": 3e-4, "cur_lr_alpha": 2e-4}, [[1e-3, 2e-4, 3e-4]]),
}
N_UPDATES = 6
ENV_STEP_PER_UPDATE = 100  # the env_step handed to update k (0-based) is 100 * k


class Setup:
    """A policy built through the real config path, and batches collected by its own collector."""

    def __init__(self, case, lr_scheduler, seed=0):
        name, rates, _, _ = CASES[case]
        main, create = read_config_file(os.path.join(CONFIGS, f"{name}.py"))
        overrides = {**SMALL, **{f"policy.learn.{k}": v for k, v in rates.items()}}
        if lr_scheduler != "absent":
            overrides["policy.learn.lr_scheduler"] = lr_scheduler
        set_seed(seed)
        self.cfg = compile_input((main, create), seed, overrides)
        self.parts = build(self.cfg, seed)
        self.policy = self.parts.policy
        collector = SampleCollector(self.parts.collector_env, self.policy.collect_mode)
        buffer = ReplayBuffer(dict(replay_buffer_size=1000), seed=seed)
        buffer.push(collector.collect(32), collector.envstep)
        self.batches = [buffer.sample(8, 0) for _ in range(N_UPDATES)]
        self.parts.collector_env.close()
        self.parts.evaluator_env.close()

    def optimizers(self):
        return self.policy._optimizers()

    def lrs(self):
        return [[g["lr"] for g in opt.param_groups] for opt in self.optimizers()]

    def train(self, learner, updates):
        infos = []
        for k in updates:
            infos.append(learner.train(copy.deepcopy(self.batches[k]), env_step=ENV_STEP_PER_UPDATE * k))
        return infos


# Hand-worked multipliers of the last update (the sixth: train_iter 5, env_step 500).
# linear over train_iter, steps=10, min 0.2: 1 - 0.8 * 5/10 = 0.6.
# cosine over env_step, steps=800, min 0.1: 0.1 + 0.45 * (1 + cos(pi * 500/800)) = 0.1 + 0.45 * (1 - 0.38268343).
SCHEDULES = [
    (dict(type="linear", over="train_iter", steps=10, min_lr_ratio=0.2), 0.6),
    (dict(type="cosine", over="env_step", steps=800, min_lr_ratio=0.1), 0.1 + 0.45 * (1 - 0.3826834323650898)),
    (dict(epoch_num=4, min_lr_lambda=0.3), 0.3),  # DI-engine's PPO form: linear over 4 iterations, then 0.3
]


@pytest.mark.parametrize("schedule, m", SCHEDULES)
@pytest.mark.parametrize("case", list(CASES))
def test_optimizer_rates_after_real_updates_are_base_times_multiplier(case, schedule, m):
    setup = Setup(case, schedule)
    _, _, logged, bases = CASES[case]
    assert setup.lrs() == bases  # before any update: the configured rates
    learner = Learner(setup.policy.learn_mode)
    infos = setup.train(learner, range(N_UPDATES))
    assert learner.train_iter == N_UPDATES
    for got, base in zip(setup.lrs(), bases):
        assert got == pytest.approx([b * m for b in base], rel=1e-12)
    for key, base in logged.items():  # the rate each update used, as logged
        assert float(infos[-1][key]) == pytest.approx(base * m, rel=1e-12), key
    means = learner.pop_means()
    assert set(logged) <= set(means)


@pytest.mark.parametrize("case", list(CASES))
def test_the_first_update_uses_the_base_rate_and_every_update_its_own_multiplier(case):
    """linear over train_iter, steps=4, min 0: updates 0..5 use 1, 0.75, 0.5, 0.25, 0, 0 times the base."""
    setup = Setup(case, dict(type="linear", steps=4, min_lr_ratio=0.0))
    _, _, logged, _ = CASES[case]
    key, base = next(iter(logged.items()))
    infos = setup.train(Learner(setup.policy.learn_mode), range(N_UPDATES))
    assert [float(info[key]) / base for info in infos] == pytest.approx([1, 0.75, 0.5, 0.25, 0, 0], abs=1e-12)


def _params(policy):
    return [p.detach().clone() for p in policy.model.parameters()]


@pytest.mark.parametrize("case", list(CASES))
def test_none_and_constant_leave_training_bit_identical(case):
    runs = {}
    for label, schedule in (("absent", "absent"), ("none", None), ("constant", dict(type="constant", steps=3)),
                            ("ratio_one", dict(type="cosine", steps=3, min_lr_ratio=1.0))):
        setup = Setup(case, schedule)
        learn_mode = setup.policy.learn_mode
        if label != "ratio_one":  # nothing runs per update
            assert learn_mode.set_counters is None and setup.policy._lr_scheduler is None
        infos = setup.train(Learner(learn_mode), range(N_UPDATES))
        runs[label] = (_params(setup.policy), infos[-1])
    reference, ref_info = runs["absent"]
    for label, (params, info) in runs.items():
        assert all(torch.equal(a, b) for a, b in zip(reference, params)), label
        for key, value in ref_info.items():  # the same losses, bit for bit
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(info[key])), (label, key)


@pytest.mark.parametrize("case", ["impala", "acer", "sac"])
def test_a_loaded_learn_state_continues_the_schedule_at_the_restored_counters(case):
    """The schedule is a function of the counters: a fresh policy that loads a learn state (whose optimiser state
    carries the decayed rates) and a learner at the restored train_iter train exactly as the original goes on."""
    schedule = dict(type="cosine", over="train_iter", steps=5, min_lr_ratio=0.1)
    straight = Setup(case, schedule)
    learner = Learner(straight.policy.learn_mode)
    straight.train(learner, range(3))
    state = copy.deepcopy(straight.policy.learn_mode.state_dict())
    rng = torch.get_rng_state()  # SAC samples actions in its update
    straight.train(learner, range(3, N_UPDATES))

    resumed = Setup(case, schedule, seed=1)  # other initial weights: everything must come from the state
    resumed.batches = straight.batches
    resumed.policy.learn_mode.load_state_dict(state)
    torch.set_rng_state(rng)
    resumed.train(Learner(resumed.policy.learn_mode, train_iter=3), range(3, N_UPDATES))
    assert resumed.lrs() == straight.lrs()
    assert all(torch.equal(a, b) for a, b in zip(_params(straight.policy), _params(resumed.policy)))

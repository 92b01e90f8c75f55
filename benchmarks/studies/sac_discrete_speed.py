"""Discrete and mixed SAC per update: ding_lite against a CleanRL-style discrete SAC, on the same CPU.

Neither SB3 nor SBX has discrete or mixed SAC, so the baseline is written here, in the style of CleanRL's
``sac_atari.py`` (without its conv encoder): an actor MLP with a softmax head, two critic MLPs with Q(s, .) heads and
their targets, three Adam optimizers (critics, actor, temperature), and per update the critic step, then the actor
step on the freshly stepped critics, then the temperature step and the Polyak update; exact expectations over the
actions, as ding_lite's discrete SAC. ding_lite's side is the policy's own update (``_forward_learn``, what the learner
calls) built through the real config path: ``cartpole_sac.py`` (CartPole-v1: 4 observations, 2 actions) for discrete
SAC and ``mixed_sac.py`` (MixedTarget: a gear out of 3 and a 2-dim direction) for mixed SAC, which has no baseline
anywhere and is timed on its own. Networks [H, H], batch 256, fixed random batches; alternating rounds of 100
updates (median of each), the ratio of each round reported. Writes benchmarks/studies/results/sac_discrete_speed.json.

    python benchmarks/studies/sac_discrete_speed.py [--hidden 64 256] [--threads 1 2] [--rounds 6]
"""
import argparse
import copy
import os
import statistics

import torch
import torch.nn.functional as F
from torch import nn

import sac_update_profile as P  # a study beside this one; it puts the repository and benchmarks/ on the path
from machine import STUDY_RESULTS, write_results

BATCH = 256


def ding_lite_policy(config: str, hidden: int, threads: int):
    """The policy of a shipped config at [hidden, hidden], built as a run builds it (its envs read for the shapes)."""
    from ding_lite.config import read_config_file
    from ding_lite.entry.build import build, compile_input
    main, create = read_config_file(os.path.join(P.ROOT, "dizoo_configs", config))
    cfg = compile_input((main, create), 0, {
        "policy.model.actor_head_hidden_size": hidden, "policy.model.critic_head_hidden_size": hidden,
        "policy.learn.batch_size": BATCH, "torch_threads": threads, "env.collector_env_num": 1,
        "env.evaluator_env_num": 1})
    parts = build(cfg, 0)
    parts.collector_env.close()
    parts.evaluator_env.close()
    return parts.policy


def random_batch(policy, obs_dim: int) -> dict:
    """B random transitions; the actions are the policy's own uniformly random ones (its warm-up actions)."""
    g = torch.Generator().manual_seed(0)
    obs = torch.randn(BATCH, obs_dim, generator=g)
    torch.manual_seed(0)
    action = policy._forward_collect(obs, random_action=True)["action"]
    return {"obs": obs, "next_obs": torch.randn(BATCH, obs_dim, generator=g), "action": action,
            "reward": torch.randn(BATCH, generator=g), "terminated": torch.rand(BATCH, generator=g) < 0.05,
            "truncated": torch.zeros(BATCH, dtype=torch.bool)}


def mlp(n_in: int, hidden: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, n_out))


class CleanRLDiscreteSAC:
    """Discrete SAC as CleanRL's sac_atari.py updates it (MLP bodies instead of its conv encoder)."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: int, gamma: float = 0.99, tau: float = 0.01,
                 lr: float = 1e-3, target_entropy_ratio: float = 0.5) -> None:
        torch.manual_seed(0)
        self.actor = mlp(obs_dim, hidden, n_actions)
        self.qf1, self.qf2 = mlp(obs_dim, hidden, n_actions), mlp(obs_dim, hidden, n_actions)
        self.qf1_target, self.qf2_target = copy.deepcopy(self.qf1), copy.deepcopy(self.qf2)
        self.q_optimizer = torch.optim.Adam(list(self.qf1.parameters()) + list(self.qf2.parameters()), lr=lr)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=lr)
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.a_optimizer = torch.optim.Adam([self.log_alpha], lr=lr)
        self.target_entropy = target_entropy_ratio * torch.log(torch.tensor(float(n_actions))).item()
        self.gamma, self.tau = gamma, tau

    def _policy(self, obs: torch.Tensor):
        logits = self.actor(obs)
        return F.softmax(logits, dim=-1), F.log_softmax(logits, dim=-1)

    def update(self, data: dict) -> None:
        obs, next_obs, action = data["obs"], data["next_obs"], data["action"]
        alpha = self.log_alpha.exp().item()
        with torch.no_grad():
            probs, log_pi = self._policy(next_obs)
            min_q_next = torch.min(self.qf1_target(next_obs), self.qf2_target(next_obs))
            v_next = (probs * (min_q_next - alpha * log_pi)).sum(dim=1)
            target = data["reward"] + (1 - data["terminated"].float()) * self.gamma * v_next
        q1 = self.qf1(obs).gather(1, action.long().view(-1, 1)).view(-1)
        q2 = self.qf2(obs).gather(1, action.long().view(-1, 1)).view(-1)
        qf_loss = F.mse_loss(q1, target) + F.mse_loss(q2, target)
        self.q_optimizer.zero_grad()
        qf_loss.backward()
        self.q_optimizer.step()
        probs, log_pi = self._policy(obs)
        with torch.no_grad():
            min_q = torch.min(self.qf1(obs), self.qf2(obs))
        actor_loss = (probs * (alpha * log_pi - min_q)).sum(dim=1).mean()
        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        self.actor_optimizer.step()
        alpha_loss = (probs.detach() * (-self.log_alpha.exp() * (log_pi.detach() + self.target_entropy))).mean()
        self.a_optimizer.zero_grad()
        alpha_loss.backward()
        self.a_optimizer.step()
        with torch.no_grad():
            for net, target_net in ((self.qf1, self.qf1_target), (self.qf2, self.qf2_target)):
                for p, tp in zip(net.parameters(), target_net.parameters()):
                    tp.data.copy_(self.tau * p.data + (1 - self.tau) * tp.data)


def alternate(fns: dict, rounds: int) -> dict:
    for _ in range(20):
        for fn in fns.values():
            fn()
    ms = {name: [] for name in fns}
    for r in range(rounds):
        for name in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
            ms[name].append(P.median_ms(fns[name], 100))
    return ms


def measure(hidden: int, threads: int, rounds: int) -> dict:
    torch.set_num_threads(threads)
    discrete = ding_lite_policy("cartpole_sac.py", hidden, threads)
    mixed = ding_lite_policy("mixed_sac.py", hidden, threads)
    torch.set_num_threads(threads)
    d_batch = random_batch(discrete, 4)
    m_batch = random_batch(mixed, mixed._cfg.model.obs_shape)
    baseline = CleanRLDiscreteSAC(4, 2, hidden)
    ms = alternate({"ding_lite_discrete": lambda: discrete._forward_learn(dict(d_batch)),
                    "cleanrl_style_discrete": lambda: baseline.update(d_batch),
                    "ding_lite_mixed": lambda: mixed._forward_learn(dict(m_batch))}, rounds)
    med = {name: round(statistics.median(v), 3) for name, v in ms.items()}
    per_round = [round(b / d, 2) for b, d in zip(ms["cleanrl_style_discrete"], ms["ding_lite_discrete"])]
    return {"hidden": hidden, "threads": threads, "update_ms": med,
            "cleanrl_over_ding_lite_discrete_per_round": per_round,
            "rounds_ms": {name: [round(x, 3) for x in v] for name, v in ms.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    rows = []
    for hidden in args.hidden:
        for threads in args.threads:
            row = measure(hidden, threads, args.rounds)
            rows.append(row)
            m = row["update_ms"]
            print(f"[{hidden}, {hidden}], {threads} thread(s), ms per update: ding_lite discrete "
                  f"{m['ding_lite_discrete']:.3f}, CleanRL-style discrete {m['cleanrl_style_discrete']:.3f} "
                  f"(CleanRL-style / ding_lite per round {row['cleanrl_over_ding_lite_discrete_per_round']}), "
                  f"ding_lite mixed {m['ding_lite_mixed']:.3f}", flush=True)
    write_results("sac_discrete_speed", results_dir=STUDY_RESULTS, settings=vars(args), rows=rows,
                  torch=torch.__version__)


if __name__ == "__main__":
    main()

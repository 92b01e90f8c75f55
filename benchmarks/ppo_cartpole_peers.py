"""PPO on CartPole-v1 side by side: ding_lite, Stable-Baselines3 and a CleanRL-style single-file PPO, env steps and
wall time to the first evaluation mean >= 475.

The same protocol for the three: gymnasium CartPole-v1, seed s, the hyperparameters of dizoo_configs/cartpole_ppo.py
(8 envs x 32 steps per collection, 10 epochs x 4 minibatches of 64, Adam lr 1e-3, gamma 0.98, GAE lambda 0.8, clip
0.2, value weight 0.5, entropy weight 0, gradient norm clipped at 0.5, per-minibatch advantage normalisation, separate
actor and critic MLPs of three tanh layers of 64, orthogonal init with gain sqrt 2 and 0.01 / 1 for the actor's /
critic's output layer, a truncation bootstrapped from the final observation's value), an evaluation of 5
deterministic (greedy) episodes at env step 0 and then every --eval-every env steps (after the update on the
collection that ends there), a stop at the first evaluation mean >= 475 or at --budget env steps. ding_lite runs
through its Python API (``serial_pipeline``, torch_threads=1) and its own evaluator (5 envs, 5 episodes, greedy);
SB3 and the CleanRL-style PPO are evaluated by one shared function (``evaluate``: 5 episodes, argmax action, eval env
seeds 10,000 x (s + 1) + i). Wall time: from just before the contestant builds its envs and model to the stop (its
evaluations, and for ding_lite its run directory, checkpoint and result.json, included; Python and library imports
excluded, as they are done once, before the first run). All runs in one process with one torch thread, one after
another, interleaved per seed (ding_lite, sb3, cleanrl for seed 0, then seed 1, ...) so that the machine's load falls
on all alike. Needs the extra `bench` (stable-baselines3). Writes benchmarks/results/ppo_cartpole_peers.json.

The config's network is three hidden layers, not two: ``encoder_hidden_size_list=[64, 64]`` then a head with one
hidden layer of ``actor_head_hidden_size=64`` (and the same for the critic), so SB3 and the CleanRL-style PPO get
``net_arch`` [64, 64, 64] by default; ``--peer-layers 2`` gives them the usual 64-64 instead.

    python benchmarks/ppo_cartpole_peers.py [--seeds 0 1 2] [--budget 100000] [--contestants ding_lite sb3 cleanrl]
                                            [--peer-layers 3] [--quick] [--output FILE]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Callable, Optional

import gymnasium as gym
import numpy as np
import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from machine import write_results  # noqa: E402  (benchmarks/machine.py)

CONFIG = os.path.join(ROOT, "dizoo_configs", "cartpole_ppo.py")
ENV_ID = "CartPole-v1"
TARGET = 475.0
# The hyperparameters of dizoo_configs/cartpole_ppo.py, as SB3 and the CleanRL-style PPO take them.
HP = dict(n_envs=8, n_steps=32, n_epochs=10, batch_size=64, lr=1e-3, gamma=0.98, gae_lambda=0.8, clip=0.2,
          vf_coef=0.5, ent_coef=0.0, max_grad_norm=0.5, hidden=64, layers=3, eval_episodes=5)
CONTESTANTS = ("ding_lite", "sb3", "cleanrl")


def evaluate(act: Callable[[np.ndarray], int], seed: int, episodes: int = HP["eval_episodes"],
             env_id: str = ENV_ID) -> float:
    """Mean return of ``episodes`` episodes of ``act`` (observation -> greedy action) on fresh ``env_id`` envs."""
    env = gym.make(env_id)
    returns = []
    for i in range(episodes):
        obs, _ = env.reset(seed=10_000 * (seed + 1) + i)
        done, total = False, 0.0
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def run_ding_lite(seed: int, budget: int, eval_every: int, config: str = CONFIG,
                  iters_per_env_step: Optional[float] = None, target: float = TARGET) -> dict:
    """The shipped ``config`` through ``serial_pipeline``; env steps to ``target`` (475) from its eval.csv. ``eval_every`` env
    steps become the config's ``eval_freq`` in train iterations: one per collection of ``HP``'s n_envs x n_steps
    (PPO), or ``iters_per_env_step`` of them per env step."""
    import csv
    import json
    from ding_lite.config import read_config_file
    from ding_lite.entry import serial_pipeline
    per_collect = HP["n_envs"] * HP["n_steps"]
    if iters_per_env_step is None:
        if eval_every % per_collect:
            raise ValueError(f"--eval-every {eval_every}: must be a multiple of {per_collect} (one collection)")
        eval_freq = eval_every // per_collect
    else:
        eval_freq = round(eval_every * iters_per_env_step)
    cfg = read_config_file(config)
    overrides = ["torch_threads=1", f"policy.eval.evaluator.eval_freq={eval_freq}"]
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as workdir:
        os.chdir(workdir)
        try:
            start = time.perf_counter()
            serial_pipeline(cfg, seed=seed, max_env_step=budget, overrides=overrides, exp_name="bench", quiet=True)
            wall = time.perf_counter() - start
        finally:
            os.chdir(cwd)
        run_dir = os.path.join(workdir, f"bench_seed{seed}")
        with open(os.path.join(run_dir, "eval.csv")) as f:
            rows = list(csv.DictReader(f))
        with open(os.path.join(run_dir, "result.json")) as f:
            result = json.load(f)
    hit = next((r for r in rows if float(r["return_mean"]) >= target), None)
    return {"reached": hit is not None, "env_steps": int(hit["env_step"]) if hit else int(result["env_step"]),
            "wall_s": wall, "run_clock_s": float(hit["wall_time"]) if hit else float(result["wall_time"]),
            "evaluations": len(rows), "last_eval": float(rows[-1]["return_mean"])}


def run_sb3(seed: int, budget: int, eval_every: int) -> dict:
    """SB3's PPO with the config's hyperparameters; the shared evaluation after each update that ends on a multiple of
    ``eval_every`` env steps (at the start of the next rollout)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv

    class EvalStop(BaseCallback):
        def __init__(self):
            super().__init__()
            self.next_eval, self.hit, self.evals, self.last = 0, None, 0, None

        def _on_rollout_start(self) -> None:  # after the update on the previous rollout
            if self.hit is None and self.num_timesteps >= self.next_eval:
                self.last = evaluate(lambda o: int(self.model.predict(o, deterministic=True)[0]), seed)
                self.evals += 1
                self.next_eval += eval_every
                if self.last >= TARGET:
                    self.hit = self.num_timesteps

        def _on_step(self) -> bool:
            return self.hit is None

    start = time.perf_counter()
    env = make_vec_env(ENV_ID, n_envs=HP["n_envs"], seed=seed, vec_env_cls=DummyVecEnv)
    model = PPO("MlpPolicy", env, learning_rate=HP["lr"], n_steps=HP["n_steps"], batch_size=HP["batch_size"],
                n_epochs=HP["n_epochs"], gamma=HP["gamma"], gae_lambda=HP["gae_lambda"], clip_range=HP["clip"],
                ent_coef=HP["ent_coef"], vf_coef=HP["vf_coef"], max_grad_norm=HP["max_grad_norm"],
                policy_kwargs=dict(net_arch=dict(pi=[HP["hidden"]] * HP["layers"], vf=[HP["hidden"]] * HP["layers"]),
                                   activation_fn=nn.Tanh), seed=seed, device="cpu", verbose=0)
    callback = EvalStop()
    model.learn(total_timesteps=budget, callback=callback)
    if callback.hit is None and callback.num_timesteps >= callback.next_eval:  # the evaluation at the budget
        callback._on_rollout_start()
    wall = time.perf_counter() - start
    env.close()
    return {"reached": callback.hit is not None, "env_steps": callback.hit or model.num_timesteps, "wall_s": wall,
            "evaluations": callback.evals, "last_eval": callback.last}


class Agent(nn.Module):
    """CleanRL's structure: a critic MLP and an actor MLP (``layers`` tanh layers of ``hidden``), orthogonal init
    (sqrt 2; 0.01 for the actor's output, 1 for the critic's)."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 64, layers: int = 3):
        super().__init__()

        def layer(i, o, std=np.sqrt(2)):
            lin = nn.Linear(i, o)
            nn.init.orthogonal_(lin.weight, std)
            nn.init.constant_(lin.bias, 0.0)
            return lin

        def net(out_dim, out_std):
            dims = [obs_dim] + [hidden] * layers
            body = [m for i, o in zip(dims, dims[1:]) for m in (layer(i, o), nn.Tanh())]
            return nn.Sequential(*body, layer(hidden, out_dim, out_std))

        self.critic = net(1, 1.0)
        self.actor = net(n_actions, 0.01)

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x).squeeze(-1)

    def act(self, x: torch.Tensor, action: Optional[torch.Tensor] = None):
        dist = torch.distributions.Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(x)


def run_cleanrl(seed: int, budget: int, eval_every: int) -> dict:
    """A single-file PPO in CleanRL's layout (SyncVectorEnv, rollout tensors, GAE, shuffled minibatch epochs, clipped
    surrogate), written from the PPO paper's algorithm with the config's hyperparameters: constant learning rate, no
    value clipping, and (as ding_lite and SB3 do, unlike CleanRL) a truncation bootstrapped from V(final obs)."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    n_envs, n_steps = HP["n_envs"], HP["n_steps"]
    start = time.perf_counter()
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(ENV_ID) for _ in range(n_envs)],
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    agent = Agent(envs.single_observation_space.shape[0], envs.single_action_space.n, layers=HP["layers"])
    optim = torch.optim.Adam(agent.parameters(), lr=HP["lr"], eps=1e-5)
    obs_buf = torch.zeros((n_steps, n_envs) + envs.single_observation_space.shape)
    act_buf = torch.zeros((n_steps, n_envs), dtype=torch.long)
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros((n_steps, n_envs)) for _ in range(4))
    next_obs = torch.as_tensor(envs.reset(seed=seed)[0], dtype=torch.float32)
    envs.action_space.seed(seed)
    gamma, lam = HP["gamma"], HP["gae_lambda"]

    def greedy(o: np.ndarray) -> int:
        with torch.no_grad():
            return int(agent.actor(torch.as_tensor(o, dtype=torch.float32)).argmax())

    step, next_eval, hit, evals, last = 0, 0, None, 0, None
    while True:
        if step >= next_eval:
            last, evals, next_eval = evaluate(greedy, seed), evals + 1, next_eval + eval_every
            if last >= TARGET:
                hit = step
                break
        if step >= budget:
            break
        for t in range(n_steps):  # collect
            obs_buf[t] = next_obs
            with torch.no_grad():
                action, logp, _, value = agent.act(next_obs)
            o, r, term, trunc, info = envs.step(action.numpy())
            r = torch.as_tensor(r, dtype=torch.float32)
            boot = trunc & ~term
            if boot.any():  # the time limit cut the episode: bootstrap from the final observation's value
                final = torch.as_tensor(np.stack(info["final_obs"][boot]), dtype=torch.float32)
                with torch.no_grad():
                    r[torch.as_tensor(boot)] += gamma * agent.value(final)
            act_buf[t], logp_buf[t], val_buf[t], rew_buf[t] = action, logp, value, r
            done_buf[t] = torch.as_tensor(term | trunc, dtype=torch.float32)
            next_obs = torch.as_tensor(o, dtype=torch.float32)
        step += n_envs * n_steps
        with torch.no_grad():  # GAE
            adv = torch.zeros_like(rew_buf)
            last_gae, next_value = torch.zeros(n_envs), agent.value(next_obs)
            for t in reversed(range(n_steps)):
                nonterminal = 1.0 - done_buf[t]
                delta = rew_buf[t] + gamma * next_value * nonterminal - val_buf[t]
                last_gae = delta + gamma * lam * nonterminal * last_gae
                adv[t], next_value = last_gae, val_buf[t]
            ret = adv + val_buf
        b_obs, b_act, b_logp = obs_buf.flatten(0, 1), act_buf.flatten(), logp_buf.flatten()
        b_adv, b_ret = adv.flatten(), ret.flatten()
        n = b_obs.shape[0]
        for _ in range(HP["n_epochs"]):
            perm = torch.randperm(n)
            for lo in range(0, n, HP["batch_size"]):
                mb = perm[lo:lo + HP["batch_size"]]
                _, logp, entropy, value = agent.act(b_obs[mb], b_act[mb])
                ratio = (logp - b_logp[mb]).exp()
                a = b_adv[mb]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg_loss = -torch.min(ratio * a, ratio.clamp(1 - HP["clip"], 1 + HP["clip"]) * a).mean()
                v_loss = 0.5 * ((value - b_ret[mb]) ** 2).mean()
                loss = pg_loss + HP["vf_coef"] * v_loss - HP["ent_coef"] * entropy.mean()
                optim.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), HP["max_grad_norm"])
                optim.step()
    wall = time.perf_counter() - start
    envs.close()
    return {"reached": hit is not None, "env_steps": hit if hit is not None else step, "wall_s": wall,
            "evaluations": evals, "last_eval": last}


RUNNERS = {"ding_lite": run_ding_lite, "sb3": run_sb3, "cleanrl": run_cleanrl}


def summarise(runs: list) -> dict:
    """Per contestant: seeds that reached 475, median and range of env steps and wall seconds over those, and the
    wall milliseconds per env step over all its runs (total wall time / total env steps: the speed, apart from how
    many steps a seed needed)."""
    out = {}
    for name in dict.fromkeys(r["contestant"] for r in runs):
        mine = [r for r in runs if r["contestant"] == name]
        hit = [r for r in mine if r["reached"]]
        steps = [r["env_steps"] for r in hit]
        walls = [r["wall_s"] for r in hit]
        out[name] = {"reached": f"{len(hit)}/{len(mine)}",
                     "median_env_steps": statistics.median(steps) if hit else None,
                     "env_steps_range": [min(steps), max(steps)] if hit else None,
                     "median_wall_s": round(statistics.median(walls), 2) if hit else None,
                     "wall_s_range": [round(min(walls), 2), round(max(walls), 2)] if hit else None,
                     "ms_per_env_step": round(1e3 * sum(r["wall_s"] for r in mine)
                                              / max(1, sum(r["env_steps"] for r in mine)), 3)}
    return out


def print_table(summary: dict, algorithm: str = "PPO", env_id: str = ENV_ID, target: float = TARGET) -> None:
    print(f"\n{env_id} {algorithm}, env steps and wall seconds to the first evaluation mean >= {target:g} "
          "(median over the seeds that reached it, [range]):")
    print(f"{'contestant':12}{'reached':>9}{'env steps':>12}{'range':>18}{'wall s':>9}{'range':>16}"
          f"{'ms/env step':>13}")
    for name, s in summary.items():
        if s["median_env_steps"] is None:
            print(f"{name:12}{s['reached']:>9}{'-':>12}")
            continue
        steps, walls = s["env_steps_range"], s["wall_s_range"]
        print(f"{name:12}{s['reached']:>9}{s['median_env_steps']:>12,.0f}{f'{steps[0]:,}-{steps[1]:,}':>18}"
              f"{s['median_wall_s']:>9.1f}{f'{walls[0]:.1f}-{walls[1]:.1f}':>16}{s['ms_per_env_step']:>13.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--budget", type=int, default=100_000, help="env steps per run at most")
    parser.add_argument("--eval-every", type=int, default=1280,
                        help="env steps between evaluations (ding_lite's config: every 5 collections of 256)")
    parser.add_argument("--contestants", nargs="+", default=list(CONTESTANTS), choices=CONTESTANTS)
    parser.add_argument("--peer-layers", type=int, default=3,
                        help="hidden tanh layers of 64 in SB3's and the CleanRL-style PPO's actor and critic "
                             "(ding_lite's config has 3)")
    parser.add_argument("--quick", action="store_true", help="seed 0 at a 512 env step budget: checks that it runs")
    parser.add_argument("--output", default=None,
                        help="the results JSON (default benchmarks/results/ppo_cartpole_peers.json)")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.budget, args.eval_every = [0], 512, 256
    HP["layers"] = args.peer_layers
    torch.set_num_threads(1)
    runs = []
    for seed in args.seeds:  # interleaved: every contestant on seed 0, then seed 1, ...
        for name in args.contestants:
            torch.set_num_threads(1)
            row = {"contestant": name, "seed": seed, **RUNNERS[name](seed, args.budget, args.eval_every)}
            row["wall_s"] = round(row["wall_s"], 3)
            runs.append(row)
            print(row, flush=True)
    summary = summarise(runs)
    print_table(summary)
    import stable_baselines3
    path = args.output or os.path.join(ROOT, "benchmarks", "results", "ppo_cartpole_peers.json")
    write_results(os.path.basename(path)[:-len(".json")], os.path.dirname(os.path.abspath(path)),
                  settings={"seeds": args.seeds, "budget": args.budget, "eval_every": args.eval_every,
                            "target": TARGET, "config": os.path.relpath(CONFIG, ROOT), "hyperparameters": HP,
                            "torch_threads": 1},
                  versions={"torch": torch.__version__, "gymnasium": gym.__version__,
                            "stable_baselines3": stable_baselines3.__version__, "ding_lite_commit": _commit()},
                  summary=summary, runs=runs)


def _commit() -> Optional[str]:
    import subprocess
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip() or None
    except OSError:
        return None


if __name__ == "__main__":
    main()

"""``ding_lite port --walk DIZOO_DIR``: port every IMPALA, ACER, SAC, discrete SAC, DQN and PPO-family config of a dizoo
tree and tell, per config, whether it ported and compiles, ported with TODOs, or was refused, and what changed that
affects learning. The PPO family is DI-engine's on-policy ``ppo`` and the variants port refuses with their reason
(``ppo_offpolicy``, ``ppo_stdim``, ``ppo_pg``: compat.PORT_UNMAPPED_POLICY_TYPES; multi-agent ``happo``).

docs/porting_from_dingengine.md holds this table for DI-engine 0.5.3's dizoo (a test keeps it up to date).
"""
import os
import re
import tempfile
from dataclasses import dataclass
from typing import List, Optional

from ding_lite.utils.errors import UserError

POLICY_TYPES = re.compile(r"type=['\"](impala|acer|sac|discrete_sac|ppo|ppo_offpolicy|ppo_stdim|ppo_pg|happo|dqn)['\"]")
PORTED, TODOS, BROKEN, REFUSED = "ported, compiles", "ported with TODOs", "ported, does not compile", "refused"


@dataclass
class Row:
    path: str  # relative to the dizoo directory
    outcome: str
    learning: str  # what changed that affects learning, in a few words (for a refusal: why)


def dizoo_configs(root: str) -> List[str]:
    """Every config file under ``root`` (a path with 'config' in it) whose text names one of ``POLICY_TYPES``
    (``type='sac'``, ``type='ppo'``, ...), sorted."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            if not name.endswith(".py") or "config" not in os.path.relpath(path, root):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                if POLICY_TYPES.search(f.read()):
                    found.append(path)
    return sorted(found)


# A change line of a port's report -> its few words in the table (None: not a change to learning).
_SHORT = [
    (r"changed  policy\.collect\.n_sample (\d+) -> (\d+)", lambda m: f"n_sample {m[1]} -> {m[2]} (DI-engine's updates "
                                                                     f"per env step)"),
    (r"set      policy\.model\.encoder_hidden_size_list=(\[.*?\])", lambda m: f"encoder {m[1]} (DI-engine's default)"),
    (r"set      policy\.model\.conv_channels=(\[.*?\]), conv_hidden_size=(\d+)",
     lambda m: f"conv encoder {m[1]} + {m[2]} (DI-engine's sizes)"),
    (r"set      policy\.model\.(actor|critic)_head_hidden_size=(\d+)", lambda m: f"{m[1]} head {m[2]}"),
    (r"changed  policy\.model\.(\w+)_layer_num (\d+) -> (\d+)", lambda m: f"{m[1]} layers {m[2]} -> {m[3]}"),
    (r"changed  policy\.model\.action_shape (.*) -> (\d+)", lambda m: f"action_shape {m[1]} -> {m[2]}"),
    (r"renamed  env\.env_id '(.*)' -> '(.*)'", lambda m: f"{m[1]} -> {m[2]}"),
    (r"set      env\.env_id='(.*?)'", lambda m: f"{m[1]}"),
    (r"changed  env\.stop_value (\S+) -> (\S+)", lambda m: f"stop_value {m[1]} -> {m[2]}"),
    (r"moved    env\.rew_clip -> env\.wrappers", lambda m: "rew_clip -> ClipReward wrapper"),
    (r"moved    env\.frame_stack -> env\.atari\.frame_stack", lambda m: "Atari preprocessing (env.atari)"),
    (r"set      policy\.unroll_len=(\d+) \((\d+) steps per collection over (\d+) envs\)",
     lambda m: f"unroll_len {m[1]} (n_sample {m[2]} / {m[3]} envs)"),
    (r"set      policy\.learn\.value_clip=(\S+) ", lambda m: f"value_clip {m[1]}"),
    (r"set      policy\.learn\.(\w+)=(\S+) \(DI-engine's default\)", lambda m: f"{m[1]} {m[2]} (DI-engine's default)"),
    (r"note     DI-engine's defaults (.*) have no ding_lite counterpart",
     lambda m: f"without DI-engine's {re.sub('=True', '', m[1])}"),
    (r"removed  policy\.multi_gpu", lambda m: "DDP -> one process"),
    (r"set      policy\.model\.(dueling)=True", lambda m: "dueling head (DI-engine's default)"),
    (r"set      policy\.learn\.loss='mse'", lambda m: "MSE TD loss"),
    (r"set      policy\.learn\.grad_clip_type=None", lambda m: "no gradient clipping"),
    (r"set      policy\.random_collect_size=0", lambda m: "no random warm-up"),
]


def learning_changes(changes: List[str]) -> List[str]:
    """The few words of each change (a line of ``Port.changes``) that affects learning."""
    out = []
    for change in changes:
        for pattern, words in _SHORT:
            match = re.match(pattern, change)
            if match:
                out.append(words(match))
                break
    return out


def _refusal_words(message: str) -> str:
    match = re.search(r"not ported: an? ([\w /-]+?) config \(([^:)]*)", message)
    if match is None:
        return message.split(": ", 1)[-1][:80]
    kind, detail = match.group(1), match.group(2)
    method = re.match(r"([A-Z][\w-]*) on top of", detail) or re.search(r"\.type='([\w-]+)'", detail)
    return f"{kind} ({method.group(1)})" if method else kind


def port_one(path: str, root: str, out_dir: str) -> Row:
    from .porter import port_file
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    out = os.path.join(out_dir, rel.replace("/", "__"))
    try:
        port, _ = port_file(path, out, force=True)
    except UserError as err:
        return Row(rel, REFUSED, _refusal_words(str(err)))
    words = learning_changes(port.changes)
    if port.problems is not None:
        outcome = BROKEN
        words.append(port.problems.splitlines()[0][:80])
    else:
        outcome = TODOS if port.todos else PORTED
    if port.todos:
        words.append(f"TODO(port): {', '.join(todo.split('=')[0].split(':')[0] for todo in port.todos)}")
    return Row(rel, outcome, "; ".join(words) or "none")


def walk(root: str, out_dir: Optional[str] = None) -> List[Row]:
    """Port every IMPALA/ACER/SAC/discrete SAC/DQN/PPO-family config under the dizoo directory ``root`` (into
    ``out_dir``, a temporary directory by default): a row per config."""
    paths = dizoo_configs(root)
    if not paths:
        raise UserError(f"no IMPALA, ACER, SAC, discrete SAC, DQN or PPO config under '{root}' (give the dizoo directory of a "
                        f"DI-engine checkout or wheel)")
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        return [port_one(p, root, out_dir) for p in paths]
    with tempfile.TemporaryDirectory() as tmp:
        return [port_one(p, root, tmp) for p in paths]


def walk_markdown(rows: List[Row]) -> str:
    """The table of ``walk``, with a line of counts per outcome above it."""
    counts = {}
    for row in rows:
        counts[row.outcome] = counts.get(row.outcome, 0) + 1
    summary = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    lines = [f"{len(rows)} configs: {summary}.", "", "| config (under dizoo/) | outcome | what changed that affects "
             "learning |", "|---|---|---|"]
    for row in rows:
        lines.append(f"| `{row.path}` | {row.outcome} | {row.learning.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


__all__ = ["Row", "dizoo_configs", "walk", "walk_markdown", "learning_changes", "PORTED", "TODOS", "BROKEN",
           "REFUSED"]

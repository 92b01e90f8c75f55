"""What ``ding_lite port`` carries over so that a ported config learns as the DI-engine one does, and what it refuses.

DI-engine behaviours that a key-by-key rename would silently change (each is written as a comment with its effect):

* **hidden sizes**: DI-engine's VAC (IMPALA, PPO) and ACER models default to ``encoder_hidden_size_list=[128, 128, 64]`` (ding_lite's
  to ``[128, 128]``), its SAC models to head sizes of 64 (ding_lite's 256), and its SAC heads count one hidden layer
  fewer than ding_lite's (``nn.Linear(obs, H)`` sits before a head of ``layer_num`` layers). On image observations
  DI-engine builds a conv encoder from the list (convs of ``list[:3]`` channels, kernels 8/4/3, strides 4/2/1, then a
  dense layer of ``list[-1]``): the port sizes ding_lite's Nature conv (same kernels and strides) the same way.
* **n_sample**: DI-engine's sample collector steps every env until ``n_sample`` samples are ready and keeps
  ``return_data[:n_sample]`` (the rest are dropped, their env steps still count); ding_lite keeps every sample and
  trains ``update_per_collect`` times per ``n_sample`` samples. The port sets n_sample to the number of samples
  DI-engine's collector *produces* per collect, so updates per env step match.
* **env.rew_clip** (dizoo's BipedalWalker: rewards below -10 are raised to -10) becomes gymnasium's ClipReward wrapper.
* **frame_skip / frame_stack** outside Atari (dm_control) are not moved under ``env.atari``.

Refused, with one message (see ``refusal``): multi-agent configs, imitation / inverse-RL variants (SQIL, GAIL, TREX,
GCL, ...: a reward model or expert data), exploration-bonus variants (ICM, RND), data-generation configs, the PPO
variants ding_lite's ppo is not (off-policy, ST-DIM, critic-free PPO-PG), hybrid action spaces and dizoo envs with no
gymnasium id, which ported key by key would train the plain algorithm from scratch instead, or nothing at all.
``plain_sibling`` names the plain config of the same env that ports.
"""
import math
import os
import re
from typing import Any, List, Mapping, Optional

from ding_lite.config import compat

from .tree import Entry, Section, entry_at, short

# DI-engine 0.5.3's model defaults that differ from ding_lite's (ding/model/template/vac.py, acer.py, qac.py).
DI_ENGINE_ENCODER = {"impala": [128, 128, 64], "acer": [128, 128, 64], "ppo": [128, 128, 64], "dqn": [128, 128, 64]}
DI_ENGINE_SAC_HEAD_SIZE = 64
SAC_TYPES = ("sac", "discrete_sac")

# dizoo's BipedalWalker reward clip (dizoo/box2d/bipedalwalker/envs/bipedalwalker_env.py: rew = max(-10, rew)).
REW_CLIP_MIN = -10.0
CLIP_REWARD = "gymnasium.wrappers:ClipReward"

# DI-engine reward models of imitation / inverse-RL methods -> the method's name.
REWARD_MODELS = {"gail": "GAIL", "trex": "TREX", "drex": "D-REX", "guided_cost": "GCL", "red": "RED", "pwil": "PWIL",
                 "pdeil": "PDEIL", "her": "HER"}
# DI-engine reward models that add an exploration bonus (an intrinsic reward) to the env's -> the method's name.
EXPLORATION_MODELS = {"icm": "ICM", "rnd": "RND", "ngu": "NGU"}
IMITATION_KEYS = {"policy.expert_random_collect_size": "SQIL", "policy.collect.model_path": None,
                  "policy.collect.demonstration_info_path": None, "policy.collect.data_path": None,
                  "policy.learn.expert_replay_buffer_size": None}
EXP_NAME_METHODS = {"gail": "GAIL", "trex": "TREX", "drex": "D-REX", "gcl": "GCL", "sqil": "SQIL", "red": "RED",
                    "pwil": "PWIL"}
DATA_GENERATION_KEYS = ("policy.collect.save_path", "policy.collect.data_type", "policy.collect.state_dict_path",
                        "policy.learn.learner.load_path")
VARIANT_SUFFIX = re.compile(r"_(gail|trex|gcl|sqil|drex|red|pwil|data_generation)(?=_)")
# dizoo's PPO file names: the env's name, then variant and algorithm tokens (cartpole_trex_offppo_config.py, ...).
PPO_NAME = re.compile(r"^(.+?)_(?:trex|rnd|icm|gcl|offppo|onppo|ppopg|ppo)(?:_.*)?_config\.py$")
POLICY_TYPE_TEXT = re.compile(r"policy\s*=\s*dict\(\s*type\s*=\s*['\"](\w+)['\"]")


def _get(tree: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(tree, Mapping) or key not in tree:
            return None
        tree = tree[key]
    return tree


def policy_type(main: Mapping, create: Mapping) -> Any:
    """The DI-engine policy type of a config (create_config's, else main_config's), as ding_lite names it."""
    kind = _get(create, "policy.type") or _get(main, "policy.type")
    return compat.DI_ENGINE_POLICY_TYPES.get(kind, kind)


def refusal(main: Mapping, create: Mapping, policy: str) -> Optional[str]:
    """Why ``ding_lite port`` refuses this DI-engine config (one line: what it is, what ding_lite lacks, what to do
    instead), or None. ``policy`` is its policy type (``policy_type``)."""
    plain = compat.PORT_PLAIN_POLICY.get(policy, policy)  # the algorithm of the plain config to port instead
    agents = [k for k in ("policy.multi_agent",) if _get(main, k)]
    agents += [k for k in ("policy.model.agent_obs_shape", "policy.model.global_obs_shape") if _get(main, k)]
    if agents:
        return (f"a multi-agent config ({', '.join(agents)}): ding_lite has no multi-agent envs, models or policies, "
                f"so there is nothing to port it to; train a single-agent env instead")
    evidence, method, bonus = [], None, None
    for where, tree in (("create_config.reward_model", create), ("reward_model", main)):
        model = tree.get("reward_model") if isinstance(tree, Mapping) else None
        if model is not None:
            kind = model.get("type") if isinstance(model, Mapping) else None
            evidence.append(f"{where}.type={kind!r}" if kind else where)
            method = method or REWARD_MODELS.get(str(kind), None)
            bonus = bonus or EXPLORATION_MODELS.get(str(kind), None)
    if bonus is not None and method is None:
        return (f"an exploration-bonus config ({bonus} on top of {policy}: {', '.join(dict.fromkeys(evidence))}): "
                f"{bonus} adds an intrinsic reward to the env's, and ding_lite has no reward models; ported key by "
                f"key this file would silently train plain {plain} on the env's reward alone; to do that, port "
                f"DI-engine's plain {plain} config of this env instead")
    for key, name in IMITATION_KEYS.items():
        if _get(main, key) is not None:
            evidence.append(key)
            method = method or name
    if evidence:
        tokens = re.split(r"[_\W]+", str(main.get("exp_name", "")).lower())
        method = method or next((name for token, name in EXP_NAME_METHODS.items() if token in tokens), None)
        what = f"{method} " if method else ""
        return (f"an imitation / inverse-RL config ({what}on top of {policy}: {', '.join(dict.fromkeys(evidence))}): "
                f"ding_lite has no reward models, expert data or demonstrations, and ported key by key this file "
                f"would silently train plain {plain} on the env's reward; to train {plain} on the env's reward, "
                f"port DI-engine's plain {plain} config of this env instead")
    generation = [k for k in DATA_GENERATION_KEYS if _get(main, k) is not None]
    if generation:
        return (f"a data-generation config ({', '.join(generation)}): it loads a trained model and saves the "
                f"transitions it collects, which ding_lite does not do (ported, it would silently become a training "
                f"run from scratch); to train the expert, port DI-engine's plain {plain} config of this env; to "
                f"evaluate a checkpoint, run ding_lite -m eval -c CONFIG --load-path CKPT")
    return _ppo_refusal(main, create, policy)


def _ppo_refusal(main: Mapping, create: Mapping, policy: str) -> Optional[str]:
    """The refusals of DI-engine's PPO family: hybrid action spaces, PPO variants ding_lite lacks, off-policy PPO, and
    (for any policy) dizoo envs that are not gymnasium envs."""
    hybrid = [k for k in ("policy.action_space", "policy.model.action_space") if _get(main, k) == "hybrid"]
    if hybrid and compat.PORT_PLAIN_POLICY.get(policy, policy) == "ppo":
        return (f"a hybrid action space config ({hybrid[0]}='hybrid'): DI-engine's hybrid PPO picks a discrete "
                f"action type and its continuous arguments; ding_lite's ppo takes discrete, continuous and "
                f"multi-discrete action spaces, so there is nothing to port it to")
    if policy in compat.PORT_UNMAPPED_POLICY_TYPES:
        what, why = compat.PORT_UNMAPPED_POLICY_TYPES[policy]
        return (f"{what} config (create_config.policy.type='{policy}'): {why}; port DI-engine's on-policy PPO "
                f"config (type 'ppo') of this env instead")
    if policy == "ppo" and _get(main, "policy.on_policy") is False:
        what, why = compat.PORT_UNMAPPED_POLICY_TYPES["ppo_offpolicy"]
        return (f"{what} config (policy.on_policy=False): {why}; port DI-engine's on-policy PPO config of this env "
                f"instead")
    env = _get(create, "env.type") or _get(main, "env.type")
    if env in compat.DIZOO_NON_GYMNASIUM_ENVS:
        return (f"a non-gymnasium env config (create_config.env.type='{env}': {compat.DIZOO_NON_GYMNASIUM_ENVS[env]}): "
                f"ding_lite makes envs by gymnasium id and this env has none; to train it, register a gymnasium "
                f"version of your own (docs/custom_env.md) and write its config by hand")
    if env is None and _get(main, "env.env_id") is None:
        return ("an env-less config (neither create_config.env.type nor env.env_id: its __main__ block "
                "builds the env itself): ding_lite makes envs by gymnasium id; set env.env_id, or register your env "
                "(docs/custom_env.md) and write its config by hand")
    return None


def plain_sibling(path: str, policy: Optional[str] = None) -> Optional[str]:
    """The plain config beside a variant config, if it exists: ``hopper_gail_sac_config.py`` ->
    ``hopper_sac_config.py``; for the PPO family (``policy`` 'ppo' or a variant of it), the env's ``*_onppo`` or
    ``*_ppo`` config (``cartpole_trex_offppo_config.py`` -> ``cartpole_ppo_config.py``)."""
    name = os.path.basename(path)
    candidates = [VARIANT_SUFFIX.sub("", name)]
    match = PPO_NAME.match(name)
    if match and compat.PORT_PLAIN_POLICY.get(policy, policy) == "ppo":
        candidates += [f"{match.group(1)}_onppo_config.py", f"{match.group(1)}_ppo_config.py"]
    for plain in candidates:
        candidate = os.path.join(os.path.dirname(path), plain)
        if plain != name and os.path.exists(candidate):
            return candidate
    return None


def policy_type_in_text(path: str) -> Optional[str]:
    """The policy type a config file's text names (``policy=dict(type='ppo_pg')``), for a file that cannot be run."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            match = POLICY_TYPE_TEXT.search(f.read())
    except OSError:
        return None
    return match.group(1) if match else None


def is_atari(env_type: Optional[str], env_id: Any) -> bool:
    """Whether the env is an Atari one (DI-engine's 'atari' env type, or an ale-py id)."""
    return env_type == "atari" or (isinstance(env_id, str) and bool(re.search(r"NoFrameskip|^ALE/", env_id)))


# ---- model sizes -------------------------------------------------------------------------------------------------
def _child(section: Section, key: str) -> Optional[Section]:
    """The sub-section ``key`` of ``section`` (made if absent, an empty dict made a section), or None if ``key`` holds
    a value."""
    entry = section.find(key)
    if entry is not None and isinstance(entry.value, Mapping) and not entry.value:
        entry.value = Section()
    value = section.child(key)
    return value if isinstance(value, Section) else None


def carry_model(port: Any, policy: str, atari: bool) -> None:
    """Write DI-engine's model sizes where ding_lite's defaults differ (module docstring)."""
    policy_section = _child(port.main, "policy")
    if policy_section is None:
        return
    had_model = policy_section.has("model")
    model = _child(policy_section, "model")
    if model is None:
        return
    if policy in DI_ENGINE_ENCODER:
        entry = model.find("encoder_hidden_size_list")
        if entry is None:
            sizes = list(DI_ENGINE_ENCODER[policy])
            entry = model.put("encoder_hidden_size_list", sizes,
                              f"set policy.model.encoder_hidden_size_list={sizes}: DI-engine's default for the "
                              f"{policy} model, which this config leaves unset (ding_lite's default is [128, 128])")
            port.changes.append(f"set      policy.model.encoder_hidden_size_list={sizes} (DI-engine's default)")
        if atari:
            _carry_conv(port, model, entry.value)
    elif policy in SAC_TYPES:
        for head in ("actor", "critic"):
            size, layers = model.find(f"{head}_head_hidden_size"), model.find(f"{head}_head_layer_num")
            if size is None:
                model.put(f"{head}_head_hidden_size", DI_ENGINE_SAC_HEAD_SIZE,
                          f"set policy.model.{head}_head_hidden_size={DI_ENGINE_SAC_HEAD_SIZE}: DI-engine's default "
                          f"for the {policy} model, which this config leaves unset (ding_lite's default is 256)")
                port.changes.append(f"set      policy.model.{head}_head_hidden_size={DI_ENGINE_SAC_HEAD_SIZE} "
                                    f"(DI-engine's default)")
            if layers is not None and isinstance(layers.value, int) and not isinstance(layers.value, bool):
                old, layers.value = layers.value, layers.value + 1
                layers.notes.append(f"changed policy.model.{head}_head_layer_num {old} -> {old + 1}: DI-engine's "
                                    f"{policy} {head} has a Linear(input, hidden) layer before its head of {old} "
                                    f"layers, {old + 1} hidden layers in all; ding_lite's layer_num counts them all")
                port.changes.append(f"changed  policy.model.{head}_head_layer_num {old} -> {old + 1}")
    if not had_model and not model.entries:
        policy_section.entries = [e for e in policy_section.entries if e.key != "model"]


def _carry_conv(port: Any, model: Section, sizes: Any) -> None:
    if model.has("conv_channels") or model.has("conv_hidden_size") or not isinstance(sizes, (list, tuple)):
        return
    sizes = list(sizes)
    if len(sizes) < 3 or len(sizes) > 4:
        port.todo(model, f"policy.model.encoder_hidden_size_list={sizes}: on Atari frames DI-engine builds a conv "
                         f"encoder from it (3 convs, then residual blocks for every size between the 4th and the "
                         f"last, then a dense layer); ding_lite's Nature conv has 3 convs and a dense layer, sized "
                         f"by policy.model.conv_channels (3 ints) and conv_hidden_size: set them")
        return
    channels, hidden = sizes[:3], sizes[-1]
    model.put("conv_channels", channels,
              f"set policy.model.conv_channels={channels} and conv_hidden_size={hidden}: on Atari frames DI-engine "
              f"builds its conv encoder from encoder_hidden_size_list={sizes} (convs of {channels} channels, kernels "
              f"8, 4, 3, strides 4, 2, 1, then a dense layer of {hidden}); ding_lite's Nature conv (the same kernels "
              f"and strides) is sized the same way here (remove both for the paper's 32, 64, 64 and 512)")
    model.put("conv_hidden_size", hidden)
    port.changes.append(f"set      policy.model.conv_channels={channels}, conv_hidden_size={hidden} (DI-engine's conv "
                        f"sizes)")


# ---- n_sample ------------------------------------------------------------------------------------------------------
def di_engine_samples_per_collect(n_sample: int, env_num: int, unroll_len: int) -> int:
    """How many train samples DI-engine 0.5.3's SampleSerialCollector produces (before it keeps
    ``return_data[:n_sample]``) with ``env_num`` envs: every env runs trajectories of
    ``traj_len = max(unroll_len, ceil(n_sample / env_num))`` steps, each cut into ``ceil(traj_len / unroll_len)``
    samples, until at least ``n_sample`` are ready (episode ends, which cut trajectories short, are ignored)."""
    traj_len = max(unroll_len, math.ceil(n_sample / env_num))
    per_env = math.ceil(traj_len / unroll_len)
    rounds = math.ceil(n_sample / (env_num * per_env))
    return max(1, round(rounds * env_num * traj_len / unroll_len))


def carry_n_sample(port: Any, defaults: Mapping) -> None:
    """Set policy.collect.n_sample so that updates per env step match DI-engine's (module docstring)."""
    policy = _child(port.main, "policy")
    if policy is None:
        return
    collect = entry_at(port.main, ("policy", "collect", "n_sample"))
    n_sample = collect.value if collect is not None else _get(defaults, "policy.collect.n_sample")
    env_num = entry_at(port.main, ("env", "collector_env_num"))  # unset: DI-engine's env count is not known
    env_num = env_num.value if env_num is not None else None
    unroll = entry_at(port.main, ("policy", "unroll_len"))
    unroll = unroll.value if unroll is not None else _get(defaults, "policy.unroll_len")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (n_sample, env_num, unroll)):
        return
    new = di_engine_samples_per_collect(n_sample, env_num, unroll)
    if new == n_sample:
        return
    note = (f"changed policy.collect.n_sample {n_sample} -> {new}: with {env_num} collector envs (unroll_len "
            f"{unroll}) DI-engine's collector produces {new} samples per collect ({new * unroll} env steps), keeps "
            f"return_data[:{n_sample}] and trains update_per_collect times; ding_lite keeps every sample and trains "
            f"update_per_collect times per n_sample samples, so n_sample={new} gives DI-engine's updates per env "
            f"step (n_sample={n_sample} would give {new / n_sample:g}x as many; ding_lite also stores the "
            f"{new - n_sample} samples per collect DI-engine drops)")
    if collect is not None:
        collect.value = new
        collect.notes.append(note)
    elif _child(policy, "collect") is not None:
        _child(policy, "collect").put("n_sample", new, note)
    else:
        return
    port.changes.append(f"changed  policy.collect.n_sample {n_sample} -> {new} (DI-engine's updates per env step with "
                        f"{env_num} envs)")


# ---- env keys ------------------------------------------------------------------------------------------------------
def port_rew_clip(port: Any, section: Section, entry: Entry) -> None:
    """dizoo's ``env.rew_clip`` (BipedalWalker): rewards below -10 become -10 in training -> gymnasium's ClipReward."""
    index = section.entries.index(entry)
    if not entry.value:
        section.entries[index] = Entry(None, notes=entry.notes + [
            f"removed env.rew_clip={entry.value!r}: dizoo's reward clip, off"])
        port.changes.append("removed  env.rew_clip")
        return
    item = dict(type=CLIP_REWARD, kwargs=dict(min_reward=REW_CLIP_MIN))
    section.entries[index] = Entry(None, notes=entry.notes + [
        f"moved env.rew_clip=True -> env.wrappers: dizoo's env raises rewards below {REW_CLIP_MIN:g} to "
        f"{REW_CLIP_MIN:g} (BipedalWalker's fall penalty of -100), which gymnasium's ClipReward does here; it wraps "
        f"the evaluator's envs too, so an evaluation episode that falls counts {REW_CLIP_MIN:g} where DI-engine "
        f"counted -100 (episodes that do not fall, as at the stop value, are unchanged)"])
    wrappers = section.find("wrappers")
    if wrappers is None:
        section.put("wrappers", [item], "moved here from env.rew_clip (dizoo's reward clip)")
    else:
        wrappers.value = list(wrappers.value or []) + [item]
        wrappers.notes.append("appended ClipReward from env.rew_clip (dizoo's reward clip)")
    port.changes.append(f"moved    env.rew_clip -> env.wrappers ({CLIP_REWARD}, min_reward={REW_CLIP_MIN:g})")


NON_ATARI_FRAMES = {
    "frame_skip": "DI-engine's non-Atari envs that take it (dmc2gym's dm_control envs) repeat each action "
                  "frame_skip={value} times and sum the rewards, so the agent acts every {value}th frame and an "
                  "episode has 1/{value} of the steps; "
                  "ding_lite's frame skip is Atari's only (env.atari): add a wrapper of your own to env.wrappers, or "
                  "the agent acts every frame",
    "frame_stack": "DI-engine's non-Atari envs that take it (dmc2gym's dm_control envs) stack the last "
                   "frame_stack={value} observations; "
                   "ding_lite's frame stack is Atari's only (env.atari): add "
                   "dict(type='gymnasium.wrappers:FrameStackObservation', kwargs=dict(stack_size={value})) to "
                   "env.wrappers, or the agent sees one observation",
}


def port_frames(port: Any, section: Section, entry: Entry) -> None:
    """``env.frame_skip`` / ``env.frame_stack`` of a non-Atari env: a TODO with the effect of leaving it out."""
    index = section.entries.index(entry)
    text = f"env.{entry.key}={short(entry.value)}: " + NON_ATARI_FRAMES[entry.key].format(value=entry.value)
    section.entries[index] = Entry(None, notes=entry.notes + [f"TODO(port): {text}"])
    port.todos.append(text)


def action_shape_int(value: Any) -> Optional[int]:
    """A one-element tuple / list of an int (``action_shape = 1,``) as that int, else None."""
    if isinstance(value, (tuple, list)) and len(value) == 1 and isinstance(value[0], int) \
            and not isinstance(value[0], bool):
        return value[0]
    return None


ACTIVATION_NAMES = ("relu", "tanh", "elu", "gelu", "silu")  # ding_lite's (torch_utils/network.py ACTIVATIONS)


def activation_name(value: Any) -> Optional[str]:
    """A torch activation module written into a DI-engine config (``activation=nn.Tanh()``) as ding_lite's name of
    it (``'tanh'``), else None."""
    cls = type(value)
    name = cls.__name__.lower()
    return name if cls.__module__.startswith("torch.nn") and name in ACTIVATION_NAMES else None


MAIN_BLOCK = re.compile(r"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", re.M)


def has_main_block(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return bool(MAIN_BLOCK.search(f.read()))
    except OSError:
        return False


def main_block_note(out: str) -> List[str]:
    name = os.path.basename(out)
    return [f"removed DI-engine's `if __name__ == \"__main__\":` block (it ran DI-engine's pipeline; `python {name}` "
            f"only defines the config): run this file with  ding_lite -m serial -c {name} -s 0"]

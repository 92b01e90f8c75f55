"""``ding_lite port``: a DI-engine config file rewritten as a ding_lite config file, each change a comment.

The DI-engine file is read like any config file (``read_config_file``: it runs as a module that is not
``__main__``, so its ``if __name__ == '__main__':`` block, which imports ``ding``, never runs). Then:

* create_config: a dizoo env type becomes ``env.env_id`` (a gymnasium id), DI-engine modules in ``import_names`` and
  DI-engine buffer types are dropped, DI-engine manager and policy type names become ding_lite's;
* main_config: every key ding_lite does not take is looked up in the compat tables (``ding_lite/config/compat.py``) and moved or
  removed, its reason written as a comment where it was; a key with no entry, or one whose DI-engine behaviour
  ding_lite lacks, is commented out as ``# TODO(port):`` with ding_lite's own message;
* values DI-engine reads that ding_lite does not (old gym ids, SAC's ``action_space='reparameterization'``,
  CartPole-v0's stop value) are replaced or removed, with a comment.

``port_file`` writes the result and compiles it with ding_lite, so the caller knows whether it runs as it is.
"""
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ding_lite.utils.dict_tools import to_plain
from ding_lite.utils.errors import UserError
from ding_lite.utils.file_io import atomic_write_text
from ding_lite.utils.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, MODEL_REGISTRY, POLICY_REGISTRY

from ding_lite.config import compat
from ding_lite.config.loader import read_config_file
from ding_lite.config.validate import unknown_key_message

from . import carry as port_carry
from . import dqn as port_dqn
from . import ppo as port_ppo
from .tree import Entry, Section, entry_at, is_identifier, render_section, short, to_section

TODO = "TODO(port):"
OUT_SUFFIX = "_ding_lite.py"


# ---- the result ----------------------------------------------------------------------------------------------------
@dataclass
class Port:
    """A ported config: the output trees, a line per change, the TODOs, and whether it compiles (``problems``)."""

    main: Section
    create: Section
    changes: List[str] = field(default_factory=list)
    todos: List[str] = field(default_factory=list)
    problems: Optional[str] = None
    main_block: bool = False  # the DI-engine file had an `if __name__ == '__main__':` block (render says so)

    def change(self, section: Section, text: str, summary: str, key: Optional[str] = None, value: Any = None,
               first: bool = False) -> None:
        """Record a change: ``text`` as a comment in ``section`` (above ``key``=``value`` when given, else where a
        removed key was), ``summary`` as a line of the report."""
        if key is None:
            section.note(text)
        else:
            section.put(key, value, text, first=first)
        self.changes.append(summary)

    def todo(self, section: Section, text: str) -> None:
        section.note(f"{TODO} {text}")
        self.todos.append(text)


def _done(reason: str) -> str:
    """A compat message as a comment on the change already made: without its '; remove it' / '; move it there'."""
    return re.sub(r"[;:] (remove it|move it there)(?= \(|$)", "", reason)


def _remove(port: Port, section: Section, entry: Entry, path: str, reason: str) -> None:
    """Replace ``entry`` in ``section`` by the comment 'removed PATH=VALUE: REASON'."""
    reason = _done(reason)
    index = section.entries.index(entry)
    value = entry.value.to_plain() if isinstance(entry.value, Section) else entry.value
    text = f"removed {path}={short(value)}: {reason}"
    section.entries[index] = Entry(None, notes=entry.notes + [text])
    port.changes.append(f"removed  {path}")


def _todo_out(port: Port, section: Section, entry: Entry, path: str, reason: str) -> None:
    """Comment ``entry`` out for the user to decide: 'TODO(port): PATH=VALUE: REASON'."""
    index = section.entries.index(entry)
    value = entry.value.to_plain() if isinstance(entry.value, Section) else entry.value
    text = f"{path}={short(value)}: {reason}"
    section.entries[index] = Entry(None, notes=entry.notes + [f"{TODO} {text}"])
    port.todos.append(text)


# ---- create_config ---------------------------------------------------------------------------------------------------
_CREATE_COMPONENTS = {"env": "env", "env_manager": "manager", "policy": "policy", "replay_buffer": "buffer"}


def _port_import_names(port: Port, section: Section, where: str) -> None:
    entry = section.find("import_names")
    if entry is None or not isinstance(entry.value, (list, tuple)):
        return
    foreign = compat.di_engine_modules(entry.value)
    if not foreign:
        return
    kept = [n for n in entry.value if n not in foreign]
    reason = ("a DI-engine (dizoo) env module; ding_lite makes gymnasium envs by id (env.env_id)"
              if where.endswith("env") else "DI-engine modules; ding_lite's own components need no import_names")
    if kept:
        entry.value = kept
        entry.notes.append(f"dropped {', '.join(repr(n) for n in foreign)} from {where}.import_names: {reason}")
        port.changes.append(f"removed  {where}.import_names {foreign}")
    else:
        _remove(port, section, entry, f"{where}.import_names", reason)


def _port_component(port: Port, name: str, section: Section, where: str, facts: dict) -> None:
    """Port the ``type`` / ``import_names`` of one component section (``where`` is its dotted path for messages)."""
    _port_import_names(port, section, where)
    entry = section.find("type")
    kind = entry.value if entry is not None else None
    if not isinstance(kind, str):
        return
    if name == "env" and kind not in ENV_REGISTRY:
        facts["env_type"] = kind
        if kind in compat.DIZOO_ENV_IDS:
            _remove(port, section, entry, f"{where}.type", f"DI-engine's dizoo env; ding_lite makes gymnasium envs by "
                                                          f"id: env.env_id in main_config (the gymnasium id of this "
                                                          f"env is '{compat.DIZOO_ENV_IDS[kind]}')")
        elif kind in compat.DIZOO_ENV_TYPES:
            _remove(port, section, entry, f"{where}.type", compat.DIZOO_ENV_TYPES[kind])
        else:
            _todo_out(port, section, entry, f"{where}.type",
                      "an env type ding_lite does not have; set env.env_id to the gymnasium id of this env, or "
                      "register an env of your own (docs/writing_a_policy.md) and name it here")
    elif name == "manager" and kind in compat.DI_ENGINE_MANAGER_TYPES:
        new = compat.DI_ENGINE_MANAGER_TYPES[kind]
        entry.value = new
        entry.notes.append(f"renamed {where}.type '{kind}' -> '{new}': ding_lite's env manager for this")
        port.changes.append(f"renamed  {where}.type '{kind}' -> '{new}'")
    elif name == "manager" and kind not in ENV_MANAGER_REGISTRY:
        _todo_out(port, section, entry, f"{where}.type", f"not a ding_lite env manager (it has "
                                                         f"{', '.join(ENV_MANAGER_REGISTRY.keys())}); the default "
                                                         f"'base' is used")
    elif name == "policy" and kind in compat.DI_ENGINE_POLICY_TYPES and kind not in POLICY_REGISTRY:
        new = compat.DI_ENGINE_POLICY_TYPES[kind]
        entry.value = new
        entry.notes.append(f"renamed {where}.type '{kind}' -> '{new}': ding_lite's (and DI-engine's registered) name "
                           f"of this algorithm")
        port.changes.append(f"renamed  {where}.type '{kind}' -> '{new}'")
    elif name == "policy" and kind not in POLICY_REGISTRY:
        raise UserError(f"{where}.type='{kind}': ding_lite has no such policy (it has "
                        f"{', '.join(POLICY_REGISTRY.keys())}); port supports DI-engine configs of those algorithms")
    elif name == "model" and kind not in MODEL_REGISTRY:
        _remove(port, section, entry, f"{where}.type", f"not a ding_lite model; the policy's default model is used "
                                                       f"(ding_lite has {', '.join(MODEL_REGISTRY.keys())})")
    elif name == "buffer" and kind in compat.DI_ENGINE_BUFFER_TYPES:
        _remove(port, section, entry, f"{where}.type", "DI-engine's buffer types do not exist in ding_lite; its "
                                                       "buffer 'columnar' (the default) covers them")


def _port_create(port: Port, facts: dict) -> None:
    create = port.create
    for entry in list(create.entries):
        key = entry.key
        if key in compat.IGNORED_KEYS:
            create.entries.remove(entry)
        elif key in compat.CREATE_CONFIG_SECTIONS:
            reason = compat.CREATE_CONFIG_SECTIONS[key]
            if key in compat.PORT_TODO:
                _todo_out(port, create, entry, f"create_config.{key}", reason)
            else:
                _remove(port, create, entry, f"create_config.{key}", reason)
        elif key not in _CREATE_COMPONENTS:
            _todo_out(port, create, entry, f"create_config.{key}",
                      f"not a create_config section of ding_lite (it has {', '.join(_CREATE_COMPONENTS)})")
        elif isinstance(entry.value, Section):
            _drop_ignored(entry.value)
            _port_component(port, _CREATE_COMPONENTS[key], entry.value, f"create_config.{key}", facts)
            model = entry.value.find("model") if key == "policy" else None
            if model is not None and isinstance(model.value, Section):
                _port_component(port, "model", model.value, "create_config.policy.model", facts)


def _drop_ignored(section: Section) -> None:
    section.entries = [e for e in section.entries if e.key not in compat.IGNORED_KEYS]


# ---- main_config -----------------------------------------------------------------------------------------------------
def _main_components(port: Port, facts: dict) -> None:
    """``type`` / ``import_names`` written in main_config's sections (as DI-engine's saved total_config.py has)."""
    from ding_lite.config.defaults import SECTION_PATHS
    for name, path in SECTION_PATHS.items():
        entry = entry_at(port.main, path)
        if entry is not None and isinstance(entry.value, Section):
            _port_component(port, name, entry.value, ".".join(path), facts)


def _types(port: Port) -> Dict[str, Tuple[Optional[str], List[str]]]:
    from ding_lite.config.compile import split_config
    from ding_lite.config.create import resolve_types
    main, create = split_config(port.main.to_plain(), port.create.to_plain())
    return resolve_types(create, main, {}, "")


def _set_env_id(port: Port, facts: dict) -> None:
    """``env.env_id`` from a dizoo env type (when main_config has none), and CartPole-v0's stop value."""
    kind = facts.get("env_type")
    env = port.main.child("env")
    if kind is None:
        return
    if kind in compat.DIZOO_ENV_TYPES and kind not in compat.DIZOO_ENV_IDS:
        if not env.has("env_id"):
            port.todo(env, f"env: {compat.DIZOO_ENV_TYPES[kind]}")
    elif not env.has("env_id"):
        env_id = compat.DIZOO_ENV_IDS.get(kind)
        if env_id is None:
            port.todo(env, f"env.env_id: set the gymnasium id of DI-engine's env type '{kind}'")
        else:
            port.change(env, f"set env.env_id='{env_id}': the gymnasium id of DI-engine's dizoo env type '{kind}'",
                        f"set      env.env_id='{env_id}' (from the dizoo env type '{kind}')", "env_id", env_id,
                        first=True)
    stop = env.find("stop_value")
    if kind in compat.DIZOO_STOP_VALUES and stop is not None:
        old, new, why = compat.DIZOO_STOP_VALUES[kind]
        if stop.value == old:
            stop.value = new
            stop.notes.append(f"changed env.stop_value {old} -> {new}: {why}")
            port.changes.append(f"changed  env.stop_value {old} -> {new}")


def _port_value(port: Port, section: Section, entry: Entry, path: Tuple[str, ...], facts: dict) -> None:
    """A known key whose DI-engine value ding_lite reads differently."""
    dotted = ".".join(path)
    if dotted == "env.env_id" and entry.value in compat.DI_ENGINE_ENV_IDS:
        old, new = entry.value, compat.DI_ENGINE_ENV_IDS[entry.value]
        entry.value = new
        extra = ""
        if old in compat.MUJOCO_PY_ENV_IDS:
            facts["env_changed"] = True
            extra = " (gymnasium's MuJoCo envs need pip install \"gymnasium[mujoco]\")"
        entry.notes.append(f"renamed env.env_id '{old}' -> '{new}': the gymnasium 1.x id of this env{extra}")
        port.changes.append(f"renamed  env.env_id '{old}' -> '{new}'")
        return
    if dotted == "policy.model.action_shape" and port_carry.action_shape_int(entry.value) is not None:
        old, entry.value = entry.value, port_carry.action_shape_int(entry.value)
        entry.notes.append(f"changed policy.model.action_shape {old!r} -> {entry.value}: a one-element tuple "
                           f"(DI-engine squeezes it; ding_lite takes an int)")
        port.changes.append(f"changed  policy.model.action_shape {old!r} -> {entry.value}")
        return
    if path[-1] == "activation" and port_carry.activation_name(entry.value) is not None:
        old, entry.value = entry.value, port_carry.activation_name(entry.value)
        entry.notes.append(f"changed {dotted} {old!r} -> {entry.value!r}: ding_lite names the activation")
        port.changes.append(f"changed  {dotted} {old!r} -> {entry.value!r}")
        return
    reason = compat.value_reason(path, entry.value)
    if reason is not None and dotted == "env.env_id":  # kept, for the user to replace (the file will not compile)
        entry.notes.append(f"{TODO} {dotted}={entry.value!r}: {reason}")
        port.todos.append(f"{dotted}={entry.value!r}: {reason}")
    elif reason is not None:
        _remove(port, section, entry, dotted, reason)


PRIORITY_FLAGS = ("policy.priority", "policy.priority_IS_weight")


def _priority_refusal(policy_type: str) -> Optional[str]:
    """Why ``policy_type`` takes no prioritised replay (its ``priority_refusal``), or None when it supports it (or
    is not registered: compiling the port says so)."""
    if policy_type not in POLICY_REGISTRY:
        return None
    cls = POLICY_REGISTRY.get(policy_type)
    if getattr(cls, "supports_priority", True):
        return None
    reason = getattr(cls, "priority_refusal", "") or "its learn step returns no per-sample priorities"
    return f"policy '{policy_type}' takes no prioritised replay in ding_lite ({reason}); it samples uniformly"


def _walk(port: Port, section: Section, level: Mapping, path: Tuple[str, ...], root: Mapping, free_form: set,
          policy_type: str, facts: dict) -> None:
    for entry in list(section.entries):
        if entry.key is None:
            continue
        key, sub = entry.key, path + (entry.key,)
        dotted = ".".join(sub)
        if key in compat.IGNORED_KEYS:
            section.entries.remove(entry)
        elif dotted in PRIORITY_FLAGS and entry.value is True and _priority_refusal(policy_type):
            _remove(port, section, entry, dotted, _priority_refusal(policy_type))
        elif key in level:
            if dotted in free_form or not isinstance(entry.value, Section) or not isinstance(level[key], Mapping):
                _port_value(port, section, entry, sub, facts)
            else:
                _walk(port, entry.value, level[key], sub, root, free_form, policy_type, facts)
        else:
            _port_unknown(port, section, entry, sub, level, root, policy_type, facts)


def _port_unknown(port: Port, section: Section, entry: Entry, path: Tuple[str, ...], level: Mapping, root: Mapping,
                  policy_type: str, facts: dict) -> None:
    dotted = ".".join(path)
    value = entry.value.to_plain() if isinstance(entry.value, Section) else entry.value
    if dotted == "env.rew_clip":
        port_carry.port_rew_clip(port, section, entry)
        return
    if dotted in ("env.frame_skip", "env.frame_stack") and not facts.get("atari"):
        port_carry.port_frames(port, section, entry)
        return
    pattern = compat.main_key_pattern(path, wildcard=False)
    if pattern is None and compat.main_key_pattern(path, wildcard=True) == "env.manager.*":
        pattern = "env.manager.*"
    if pattern is None:
        message = unknown_key_message(path, level, root, policy_type, value).split(": ", 1)[1]
        _todo_out(port, section, entry, dotted, message)
        return
    reason = compat.main_key_reason(path, policy_type, wildcard=pattern.endswith("*"))
    if pattern in compat.PORT_MOVES:
        _move(port, section, entry, dotted, compat.PORT_MOVES[pattern], value, reason)
    elif pattern in compat.PORT_TODO and not compat.is_off(pattern, value):
        _todo_out(port, section, entry, dotted, reason)
    else:
        _remove(port, section, entry, dotted, reason)


def _move(port: Port, section: Section, entry: Entry, source: str, dest: str, value: Any, reason: str) -> None:
    dest_path = tuple(dest.split("."))
    there = entry_at(port.main, dest_path)
    if there is None:
        index = section.entries.index(entry)
        section.entries[index] = Entry(None, notes=entry.notes + [f"moved {source} -> {dest}: {_done(reason)}"])
        parent = port.main
        for key in dest_path[:-1]:
            parent = parent.child(key)
        parent.put(dest_path[-1], value, f"moved here from {source} (DI-engine's place for it)")
        port.changes.append(f"moved    {source} -> {dest}")
    elif there.value == value:
        _remove(port, section, entry, source, f"{_done(reason)}; {dest} already has this value")
    else:
        _todo_out(port, section, entry, source, f"{_done(reason)}; {dest}={short(there.value)} is kept, pick one "
                                                f"value")


def _drop_obs_shape(port: Port, facts: dict) -> None:
    """After a MuJoCo id change (-v3 -> -v5): the observation may differ, and ding_lite reads it from the env."""
    if not facts.get("env_changed"):
        return
    model = entry_at(port.main, ("policy", "model"))
    if model is not None and isinstance(model.value, Section):
        entry = model.value.find("obs_shape")
        if entry is not None:
            _remove(port, model.value, entry, "policy.model.obs_shape",
                    "ding_lite reads it from the env, and the gymnasium id above has a different env version")


def _hoist_empty(section: Section) -> None:
    """A sub-section left with no keys goes, its comments stay where it was."""
    for entry in list(section.entries):
        if isinstance(entry.value, Section):
            _hoist_empty(entry.value)
            if entry.value.entries and all(e.key is None for e in entry.value.entries):
                index = section.entries.index(entry)
                notes = entry.notes + [n for e in entry.value.entries for n in e.notes]
                section.entries[index] = Entry(None, notes=notes)


def port_config(main: Mapping, create: Mapping) -> Port:
    """The ding_lite version of DI-engine's ``(main_config, create_config)`` (nothing is written or compiled)."""
    from ding_lite.config.defaults import build_defaults, import_builtins

    import_builtins()  # the registries the type names are checked against
    if not isinstance(main, Mapping) or not isinstance(create, Mapping):
        raise UserError("main_config and create_config must be dicts")
    plain_main, plain_create = to_plain(main), to_plain(create)
    refused = port_carry.refusal(plain_main, plain_create, port_carry.policy_type(plain_main, plain_create))
    if refused is not None:
        raise UserError(f"not ported: {refused}")
    port = Port(to_section(plain_main), to_section(plain_create))
    facts: dict = {}
    _port_create(port, facts)
    _main_components(port, facts)
    env_id = entry_at(port.main, ("env", "env_id"))
    facts["atari"] = port_carry.is_atari(facts.get("env_type"), env_id.value if env_id is not None else None)
    types = _types(port)
    if types["policy"][0] == "ppo":
        port_ppo.port_ppo(port)
    elif types["policy"][0] == "dqn":
        port_dqn.port_dqn(port)
    defaults = build_defaults(types, port.main.to_plain().get("policy", {}))
    _walk(port, port.main, defaults.tree, (), defaults.tree, defaults.free_form, types["policy"][0], facts)
    port_carry.carry_model(port, types["policy"][0], facts["atari"])
    if types["policy"][0] == "dqn":
        port_dqn.carry_head(port)
    port_carry.carry_n_sample(port, defaults.tree)
    _set_env_id(port, facts)
    _drop_obs_shape(port, facts)
    _hoist_empty(port.main)
    _hoist_empty(port.create)
    return port


def render(port: Port, source: str, out: str) -> str:
    """The text of the ported config file."""
    header = [
        f'"""ding_lite config ported from the DI-engine config {os.path.basename(source)} by `ding_lite port`.',
        "",
        "Every change is a comment where it happened; `# TODO(port):` marks what needs your decision.",
        f"Run it:  ding_lite -m serial -c {os.path.basename(out)} -s 0",
        '"""',
    ]
    body = []
    for name, section in (("main_config", port.main), ("create_config", port.create)):
        named = all(is_identifier(e.key) for e in section.entries if e.key is not None)
        body += [f"{name} = {'dict(' if named else '{'}"] + render_section(section, 1) + [")" if named else "}", ""]
    if port.main_block:
        body += render_section(Section([Entry(None, notes=port_carry.main_block_note(out))]), 0) + [""]
    return "\n".join(header + body[:-1]) + "\n"


def default_out(path: str) -> str:
    """``<dir>/<name>_ding_lite.py`` beside ``path``."""
    root, _ = os.path.splitext(path)
    return root + OUT_SUFFIX


def port_file(path: str, out: Optional[str] = None, force: bool = False) -> Tuple[Port, str]:
    """Port the DI-engine config file ``path`` to ``out`` (default ``default_out(path)``); return the port (its
    ``problems`` says why the written file does not compile yet, None when it does) and the path written.

    Raises ``UserError`` (nothing written) for a missing or unreadable input, or an existing ``out`` without
    ``force``.
    """
    out = out or default_out(path)
    if os.path.abspath(out) == os.path.abspath(path):
        raise UserError(f"'{out}' is the input file; name another output with -o")
    if os.path.isdir(out):
        raise UserError(f"output '{out}' is a directory; name a .py file with -o")
    if not out.endswith(".py"):
        raise UserError(f"output '{out}' must be a .py file (a config file is Python)")
    if os.path.exists(out) and not force:
        raise UserError(f"output '{out}' exists; pass --force to overwrite it, or name another file with -o")
    try:
        main, create = read_config_file(path)
    except UserError:  # a file that imports DI-engine: refused by its policy type where port refuses that anyway
        kind = port_carry.policy_type_in_text(path)
        refused = port_carry.refusal({}, dict(policy=dict(type=kind)), kind) if kind else None
        if refused is None:
            raise
        main, create = {}, dict(policy=dict(type=kind))
    try:
        port = port_config(main, create)
    except UserError as err:
        policy = port_carry.policy_type(to_plain(main), to_plain(create))
        sibling = port_carry.plain_sibling(path, policy) if str(err).startswith("not ported:") else None
        hint = f" (here: {sibling})" if sibling else ""
        raise UserError(f"{path}: {err}{hint}") from None
    if port_carry.has_main_block(path):
        port.main_block = True
        port.changes.append(f"removed  the __main__ block (run: ding_lite -m serial -c {os.path.basename(out)} -s 0)")
    atomic_write_text(render(port, path, out), out)
    port.problems = compile_problems(out)
    return port, out


def compile_problems(path: str) -> Optional[str]:
    """Why the config file at ``path`` does not compile with ding_lite, or None when it does."""
    from ding_lite.config.compile import compile_config
    try:
        compile_config(read_config_file(path))
    except UserError as err:
        return str(err)
    return None


def report(port: Port, source: str, out: str) -> str:
    """What ``ding_lite port`` prints: a line per change and per TODO, then whether the file runs as it is."""
    lines = [f"ported {source} -> {out}: {len(port.changes)} changes, {len(port.todos)} TODO(port)"]
    lines += [f"  {change}" for change in port.changes]
    lines += [f"  TODO     {todo}" for todo in port.todos]
    if port.problems is not None:
        lines.append(f"{out} does not compile yet: edit its TODO(port) lines and what the error names, then run "
                     f"it with: ding_lite -m serial -c {out} -s 0")
    elif port.todos:
        lines.append(f"{out} compiles with ding_lite; read its TODO(port) lines (the keys above are commented out), "
                     f"then run it with: ding_lite -m serial -c {out} -s 0")
    else:
        lines.append(f"{out} compiles with ding_lite; run it with: ding_lite -m serial -c {out} -s 0")
    return "\n".join(lines)


__all__ = ["Port", "port_config", "port_file", "render", "report", "default_out",
           "compile_problems"]

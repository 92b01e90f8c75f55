"""The key tables of docs/porting_from_dingengine.md, generated from the compat tables (``ding_lite/config/compat.py``); a test keeps
the doc equal to them."""
from ding_lite.config import compat

from . import ppo as port_ppo


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("{policy}", "<policy>").replace("{key}", "<key>")


def key_table_markdown() -> str:
    """The tables of docs/porting_from_dingengine.md, generated from compat.py (a test keeps the doc equal to it)."""
    rows = ["| DI-engine key | kind | `ding_lite port` | ding_lite's message |", "|---|---|---|---|"]
    for pattern, message in compat.MAIN_CONFIG_KEYS.items():
        kind = compat.port_action(pattern)
        if pattern in compat.PORT_MOVES:
            action = f"moves it to `{compat.PORT_MOVES[pattern]}`"
        elif pattern in compat.PORT_TODO:
            off = compat.PORT_TODO[pattern]
            action = "TODO(port)" if off is compat._NEVER else f"removes `{off!r}`, else TODO(port)"
        elif pattern == "env.*":
            kind, action = "unknown", "TODO(port)"
        else:
            action = "removes it"
        rows.append(f"| `{pattern}` | {kind} | {_cell(action)} | {_cell(message)} |")
    for source, dest in port_ppo.RENAMES.items():
        rows.append(f"| `{source}` (policy `ppo`) | moved | moves it to `{dest}` | DI-engine's PPO name and place "
                    f"for `{dest}` |")
    values = ["| DI-engine setting | kind | `ding_lite port` writes | why |", "|---|---|---|---|"]
    for kind, env_id in compat.DIZOO_ENV_IDS.items():
        values.append(f"| `create_config.env.type='{kind}'` | renamed | `env.env_id='{env_id}'` | a dizoo env; "
                      f"ding_lite makes gymnasium envs by id |")
    for kind, why in compat.DIZOO_ENV_TYPES.items():
        values.append(f"| `create_config.env.type='{kind}'` | renamed | keeps `env.env_id`"
                      f"{' (renamed below)' if kind == 'mujoco' else ''} | {_cell(why)} |")
    for old, new in compat.DI_ENGINE_ENV_IDS.items():
        values.append(f"| `env.env_id='{old}'` | renamed | `env.env_id='{new}'` | "
                      f"{_cell(compat.MAIN_CONFIG_VALUES[('env.env_id', old)])} |")
    for (path, value), why in compat.MAIN_CONFIG_VALUES.items():
        if path != "env.env_id":
            values.append(f"| `{path}={value!r}` | no effect | removes it | {_cell(why)} |")
    for kind, (old, new, why) in compat.DIZOO_STOP_VALUES.items():
        values.append(f"| `env.stop_value={old}` with `create_config.env.type='{kind}'` | renamed | "
                      f"`env.stop_value={new}` | {_cell(why)} |")
    for old, new in compat.DI_ENGINE_POLICY_TYPES.items():
        values.append(f"| `create_config.policy.type='{old}'` | renamed | `type='{new}'` | DI-engine registers "
                      f"this algorithm as '{new}' too |")
    for old, new in compat.DI_ENGINE_MANAGER_TYPES.items():
        values.append(f"| `create_config.env_manager.type='{old}'` | renamed | `type='{new}'` | ding_lite's env "
                      f"manager for this |")
    for kind in compat.DI_ENGINE_BUFFER_TYPES:
        values.append(f"| `create_config.replay_buffer.type='{kind}'` | renamed | removes it (the default "
                      f"`'columnar'`) | ding_lite's one buffer covers DI-engine's buffer types |")
    for section, why in compat.CREATE_CONFIG_SECTIONS.items():
        kind = "not supported" if section in compat.PORT_TODO else ("moved" if section == "model" else "no effect")
        action = "TODO(port)" if section in compat.PORT_TODO else "removes it"
        values.append(f"| `create_config.{section}` | {kind} | {action} | {_cell(why)} |")
    values.append("| `create_config.env.import_names`, `create_config.policy.import_names` (any `import_names`) "
                  "naming `ding.*` / `dizoo.*` modules | no effect | removes them | DI-engine modules; ding_lite's "
                  "components need none, and ding_lite makes envs by gymnasium id |")
    for key in compat.IGNORED_KEYS:
        values.append(f"| `{key}` (any section) | no effect | drops it silently | a label DI-engine writes into "
                      f"every section of its saved total_config.py |")
    return "\n".join(rows) + "\n\n" + "\n".join(values) + "\n"

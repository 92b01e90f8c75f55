"""A study's results: ``trials.csv`` and its printed table (parameters, value, state, env steps, wall time), and the
best trial's config as a runnable config file, ``best_config.py`` (written as ``total_config.py`` is)."""
import csv
import io
import os
from typing import Any, List

from ding_lite.utils.file_io import atomic_write_text

FINISHED = ("COMPLETE", "PRUNED", "FAIL")


def _best(study: Any) -> Any:
    try:
        return study.best_trial
    except ValueError:  # no complete trial yet
        return None


def best_line(study: Any) -> str:
    """'best 412.3 (#4: policy.learn.learning_rate=0.0021)', or 'no best yet'."""
    best = _best(study)
    if best is None:
        return "no best yet"
    params = ", ".join(f"{k}={_fmt(v)}" for k, v in best.params.items())
    return f"best {best.value:.4g} (#{best.number}: {params})"


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else repr(value) if isinstance(value, str) else str(value)


def trial_rows(study: Any) -> List[dict]:
    """One dict per trial: number, state, value, each parameter, env_step, wall_time_s, run_dirs."""
    names: List[str] = []
    for t in study.get_trials(deepcopy=False):
        names += [k for k in t.params if k not in names]
    rows = []
    for t in study.get_trials(deepcopy=False):
        row = {"number": t.number, "state": t.state.name.lower(),
               "value": "" if t.value is None else t.value}
        row.update({name: t.params.get(name, "") for name in names})
        row.update({"env_step": t.user_attrs.get("env_step", ""),
                    "wall_time_s": t.user_attrs.get("wall_time_s", ""),
                    "run_dirs": " ".join(t.user_attrs.get("run_dirs", []))})
        rows.append(row)
    return rows


def format_table(rows: List[dict]) -> str:
    """The trials as an aligned text table (run directories left out: they are in trials.csv)."""
    if not rows:
        return "(no trials)"
    columns = [c for c in rows[0] if c != "run_dirs"]
    cells = [[c.rsplit(".", 1)[-1] if "." in c else c for c in columns]]
    cells += [[str(row[c]) if c == "state" else _fmt(row[c]) if row[c] != "" else "-" for c in columns]
              for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in cells)


def write_results(study: Any, study_dir: str, best_config: bool = False) -> str:
    """Write trials.csv (and, with ``best_config``, best_config.py when a trial completed); return the table."""
    rows = trial_rows(study)
    if rows:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_text(out.getvalue(), os.path.join(study_dir, "trials.csv"))
    table = format_table(rows)
    best = _best(study)
    if best_config and best is not None:
        path = write_best_config(study_dir, best.params, f"{os.path.basename(os.path.normpath(study_dir))}_best")
        table += f"\n{best_line(study)}\nbest config: {path} (run it: ding_lite -m serial -c {path})"
    return table


def write_best_config(study_dir: str, params: dict, exp_name: str) -> str:
    """``best_config.py`` in ``study_dir``: the study's base config with ``params`` set, a runnable config file."""
    from ding_lite.config import compile_config, read_config_file, save_config_py
    cfg = compile_config(read_config_file(os.path.join(study_dir, "base_config.py")), overrides=dict(params),
                         exp_name=exp_name)
    path = os.path.join(study_dir, "best_config.py")
    save_config_py(cfg, path)
    return path

"""A study's pictures (matplotlib, the optional ``plot`` extra): ``history.png``, each trial's value by trial number
with the best so far, and ``importances.png``, Optuna's parameter importances (its default evaluator) once two
trials completed."""
import importlib.util
import os
import warnings
from typing import Any, List


def plot_study(study: Any, study_dir: str) -> List[str]:
    """Write the study's PNGs into ``study_dir``; returns their paths (none without matplotlib, or before the first
    complete trial)."""
    if importlib.util.find_spec("matplotlib") is None:
        return []
    import optuna
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        return []
    maximize = study.direction == optuna.study.StudyDirection.MAXIMIZE
    paths = []
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    ax.plot([t.number for t in complete], [t.value for t in complete], "o", label="complete")
    pruned = [t for t in trials if t.state == optuna.trial.TrialState.PRUNED and t.intermediate_values]
    if pruned:
        ax.plot([t.number for t in pruned], [t.intermediate_values[max(t.intermediate_values)] for t in pruned], "x",
                label="pruned (last reported)")
    best, xs, ys = None, [], []
    for t in complete:
        if best is None or (t.value > best if maximize else t.value < best):
            best = t.value
        xs.append(t.number)
        ys.append(best)
    last = max(t.number for t in trials if t.state.is_finished())
    if last > xs[-1]:
        xs.append(last)
        ys.append(best)
    ax.step(xs, ys, where="post", label="best so far")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("trial")
    ax.set_ylabel(f"value ({study.user_attrs.get('metric', 'metric')} return)")
    ax.legend()
    ax.set_title(f"study {study.study_name}")
    fig.tight_layout()
    paths.append(os.path.join(study_dir, "history.png"))
    FigureCanvasAgg(fig).print_png(paths[-1])
    if len(complete) >= 2:
        with warnings.catch_warnings():  # e.g. "importances will be equal" on a handful of trials
            warnings.simplefilter("ignore")
            importances = optuna.importance.get_param_importances(study)
        if importances:
            fig = Figure(figsize=(7, 1.5 + 0.4 * len(importances)))
            ax = fig.add_subplot()
            names = list(importances)[::-1]
            ax.barh(names, [importances[n] for n in names])
            ax.set_xlabel("importance (optuna.importance.get_param_importances)")
            fig.tight_layout()
            paths.append(os.path.join(study_dir, "importances.png"))
            FigureCanvasAgg(fig).print_png(paths[-1])
    return paths

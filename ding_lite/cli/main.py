"""The ``ding_lite`` command line: train or evaluate a config; ``plot`` and ``summary`` compare finished runs;
``check-env`` checks an env before training on it; ``tune`` searches hyperparameters (Optuna).

Only click and the standard library load at import: torch, gymnasium and the pipelines are imported by the command
that needs them, so ``ding_lite --help`` and the argument errors answer at once.
"""
import contextlib
import errno
import json
import os
import signal
import sys
from typing import Any, Iterator, List, Optional, Sequence, Tuple

import click

from ding_lite.utils import UserError
from ding_lite.utils.signals import stop_signal

MODES = ("serial", "parallel", "eval")


class MainGroup(click.Group):
    """The top-level command: a word that is neither a command nor an option's value is explained, not reported as
    click's "No such command" (``--set key 32`` is a forgotten '=', not a command named 32)."""

    def resolve_command(self, ctx: click.Context,
                        args: List[str]) -> Tuple[Optional[str], Optional[click.Command], List[str]]:
        if args and self.get_command(ctx, args[0]) is None and not args[0].startswith("-"):
            with user_errors():
                raise UserError(stray_argument_message(args[0], ctx.params.get("overrides") or (),
                                                       sorted(self.commands)))
        return super().resolve_command(ctx, args)


def stray_argument_message(word: str, overrides: Sequence[str], commands: Sequence[str]) -> str:
    """Why ``word`` is in the way: the value of a ``--set KEY VALUE`` written with a space, or an unknown word."""
    spaced = [item for item in overrides if "=" not in item]
    if spaced:
        return (f"--set {spaced[-1]} {word}: write --set KEY=VALUE as one word, with '=' and no spaces (--set "
                f"{spaced[-1]}={word.lstrip('=') or 'VALUE'}); quote a VALUE that has spaces: --set 'KEY=[64, 64]'")
    return (f"unexpected argument '{word}': not an option's value nor a command ({', '.join(commands)}); "
            f"see ding_lite --help")


@click.group(cls=MainGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-m", "--mode", type=click.Choice(MODES), default="serial", show_default=True,
              help="serial: train in one process; parallel: collector processes feed a learner (see --backend); "
                   "eval: evaluate a checkpoint (--load-path).")
@click.option("-c", "--config", "config_path", default=None, help="Config file (.py defining main_config).")
@click.option("-s", "--seed", "seeds", type=int, multiple=True,
              help="Seed; repeat for several runs, each in <exp_name>_seed<N>. Default: the config's seed (0).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a config key, e.g. --set policy.learn.learning_rate=3e-4 (repeatable).")
@click.option("--env-step", "max_env_step", type=int, default=None,
              help="Stop after this many env steps (a total for the run, counted from its start).")
@click.option("--train-iter", "max_train_iter", type=int, default=None,
              help="Stop after this many train iters (a total for the run).")
@click.option("--exp-name", default=None, help="Run name (overrides exp_name of the config).")
@click.option("--resume", is_flag=True, help="Continue the run (named by -c, --exp-name and -s) from its most advanced "
                                              "readable checkpoint (ckpt_last, ckpt_best or the newest iteration_<N>), "
                                              "with the run's own config (its total_config.py) and --set on top.")
@click.option("--load-path", default=None, help="Checkpoint to evaluate (-m eval); without -c, evaluated with its run's "
                                                 "config (its total_config.py, read as literals).")
@click.option("--trust-config", is_flag=True,
              help="-m eval without -c, --resume: the run's total_config.py may hold code and import the modules it "
                   "names (it is read as plain literals otherwise, and they are refused). Only for runs you trust.")
@click.option("--episodes", type=int, default=None,
              help="Episodes for -m eval (default env.n_evaluator_episode).")
@click.option("--video", "video_dir", default=None, metavar="DIR",
              help="-m eval: also record one episode to DIR (MP4, or GIF without ffmpeg; pip install "
                   "\"ding_lite[video]\"). In training: --set policy.eval.evaluator.video_every=N.")
@click.option("--backend", type=click.Choice(("local", "ray")), default=None,
              help="-m parallel: 'local' processes (default) or 'ray' actors (pip install ding_lite[ray]; cluster "
                   "address in parallel.ray_address). Same as --set parallel.backend=...")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on the terminal (they still go to log/).")
@click.pass_context
def main(ctx: click.Context, mode: str, config_path: Optional[str], seeds: Tuple[int, ...],
         overrides: Tuple[str, ...], max_env_step: Optional[int], max_train_iter: Optional[int],
         exp_name: Optional[str], resume: bool, load_path: Optional[str], episodes: Optional[int],
         backend: Optional[str], quiet: bool, video_dir: Optional[str], trust_config: bool) -> None:
    """Train or evaluate a ding_lite config, e.g. ``ding_lite -m serial -c dizoo_configs/cartpole_impala.py -s 0``;
    compare runs with ``ding_lite plot RUN_DIR...`` and ``ding_lite summary RUN_DIR...``; search hyperparameters with
    ``ding_lite tune -c CONFIG --param PATH=SPEC``."""
    if ctx.invoked_subcommand is not None:
        if config_path is not None and ctx.invoked_subcommand == "tune":
            raise click.UsageError("write -c after the command: ding_lite tune -c CONFIG ...")
        if config_path is not None:
            what = "its ENV argument" if ctx.invoked_subcommand == "check-env" else "run directories"
            raise click.UsageError(f"'{ctx.invoked_subcommand}' takes {what}, not -c; see "
                                   f"'ding_lite {ctx.invoked_subcommand} --help'")
        return
    with user_errors():
        if config_path is None and not (mode == "eval" and load_path is not None):
            raise UserError("-c/--config is required: the config file to train or evaluate (e.g. -c "
                            "dizoo_configs/cartpole_impala.py; -m eval --load-path CKPT without -c uses the run's "
                            "own config); to compare runs use 'ding_lite plot' or 'ding_lite summary'")
        _train_or_eval(mode, config_path, seeds, overrides, max_env_step, max_train_iter, exp_name, resume,
                       load_path, episodes, backend, quiet, video_dir, trust_config)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """A user's mistake or the OS's refusal is one line on stderr and exit status 2; a stop signal exits as a shell
    reports it (130 for Ctrl-C, 143 for SIGTERM). Anything else is a bug and keeps its traceback."""
    try:
        yield
    except UserError as err:
        click.echo(f"ding_lite: error: {err}", err=True)
        sys.exit(2)
    except OSError as err:  # the OS refused: a file the run needs, or a process it talks to; never a traceback
        click.echo(f"ding_lite: error: {os_error_message(err)}", err=True)
        sys.exit(2)
    except KeyboardInterrupt as err:
        signum = stop_signal(err)
        click.echo(f"ding_lite: {'terminated' if signum == signal.SIGTERM else 'interrupted'}", err=True)
        sys.exit(128 + signum)


FILE_ERRNOS = frozenset({errno.ENOENT, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.EROFS,
                         errno.EISDIR, errno.ENOTDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP, errno.EMFILE,
                         errno.ENFILE, errno.EFBIG, errno.EIO})


def os_error_message(err: OSError) -> str:
    """The line for an OSError: a file error (it names a path, or its errno is about files) blames the path, its
    permissions and free space; a broken connection to another process of the run blames that process, whose own
    error is printed above it; any other OSError is reported as the OS put it."""
    reason = err.strerror or str(err) or type(err).__name__
    if err.filename or err.errno in FILE_ERRNOS:
        where = f"'{err.filename}': " if err.filename else ""
        return f"{where}{reason}; check the path, its permissions and free space"
    if isinstance(err, ConnectionError):
        return (f"{reason} ({type(err).__name__}): a process of the run (an env process or a parallel worker) ended "
                f"unexpectedly; its own error, if it printed one, is above")
    return f"{reason} ({type(err).__name__})"


def user_module_path(config_path: Optional[str]) -> None:
    """Let the user's modules (import_names, env.wrappers, 'package:id' env ids) resolve from where the user runs and
    from the config file's directory: both go at the END of sys.path (also inherited by env and worker processes), so
    they serve only modules no installed package provides, and a stray file there (a 'tensorboardX.py') cannot
    shadow a dependency. The config file itself runs with its directory first (``read_config_file``)."""
    for entry in [os.getcwd()] + ([os.path.dirname(os.path.abspath(config_path))] if config_path else []):
        if entry not in sys.path:
            sys.path.append(entry)


def _evaluate(config: Any, load_path: str, seeds: Tuple[Optional[int], ...], overrides: Tuple[str, ...],
              episodes: Optional[int], video_dir: Optional[str]) -> None:
    from ding_lite.entry.eval import eval_pipeline
    for seed in seeds:
        result = eval_pipeline(config, load_path, seed, overrides=list(overrides), n_episode=episodes,
                               video_dir=video_dir)
        click.echo(f"seed {result['seed']}: return {result['return_mean']:.2f} +- {result['return_std']:.2f} "
                   f"(min {result['return_min']:.2f}, max {result['return_max']:.2f}) over "
                   f"{result['episodes']} episodes; checkpoint at train_iter {result['train_iter']}, "
                   f"env_step {result['env_step']}")
        if "video" in result:
            click.echo(f"video: {result['video']}")


def _train_or_eval(mode: str, config_path: Optional[str], seeds: Tuple[int, ...], overrides: Tuple[str, ...],
                   max_env_step: Optional[int], max_train_iter: Optional[int], exp_name: Optional[str],
                   resume: bool, load_path: Optional[str], episodes: Optional[int], backend: Optional[str],
                   quiet: bool, video_dir: Optional[str] = None, trust_config: bool = False) -> None:
    from ding_lite.config import read_config_file
    if trust_config and not (resume or (mode == "eval" and config_path is None)):
        raise UserError("--trust-config is for reading a run's total_config.py: with --resume, or -m eval "
                        "--load-path CKPT without -c (a -c config file is your own code and always runs)")
    if config_path is not None or trust_config:  # a run's own config read as literals imports nothing from here
        user_module_path(config_path)
    seeds = seeds or (None,)  # no -s: the config's seed
    if mode == "eval":
        if load_path is None:
            raise UserError("-m eval needs --load-path PATH (e.g. <run_dir>/ckpt/ckpt_best.pth.tar)")
        if config_path is None:  # the run's own config, read as literals (ding_lite/config/literal.py)
            from ding_lite.deploy.agent import resolve_checkpoint, run_config_input
            run_dir, load_path = resolve_checkpoint(load_path)
            config = run_config_input(run_dir, load_path, trust_config)
            if not trust_config:  # the evaluation imports nothing from the run directory or the working one
                from ding_lite.utils.import_path import isolated_imports
                with isolated_imports(run_dir):
                    return _evaluate(config, load_path, seeds, overrides, episodes, video_dir)
        else:
            config = read_config_file(config_path)
        return _evaluate(config, load_path, seeds, overrides, episodes, video_dir)
    if video_dir is not None:
        raise UserError("--video is for -m eval; to record videos while training use --set "
                        "policy.eval.evaluator.video_every=N (every N-th evaluation)")
    if load_path is not None:
        raise UserError("--load-path is for -m eval; to continue a training run use --resume")
    config = read_config_file(config_path)
    overrides = list(overrides)
    if backend is not None:
        if mode != "parallel":
            raise UserError(f"--backend is for -m parallel (the mode is {mode})")
        overrides.append(f"parallel.backend={backend}")
    from ding_lite.entry.build import check_budget, compile_input
    check_budget(max_env_step, max_train_iter)
    from ding_lite.run.run_dir import check_run_dir, run_dir_name
    if mode == "parallel":
        from ding_lite.entry.parallel import parallel_pipeline as pipeline
    else:
        from ding_lite.entry.serial import serial_pipeline as pipeline
    run_dirs = []
    for seed in seeds:  # check every seed's config and run directory before the first run starts
        cfg = compile_input(config, seed, overrides, exp_name)
        run_dirs.append(run_dir_name(cfg.exp_name, cfg.seed))
        check_run_dir(run_dirs[-1], resume)
    if len(set(seeds)) != len(seeds):
        raise UserError(f"-s {' -s '.join(map(str, seeds))}: a seed is repeated; each seed is one run directory")
    for seed in seeds:
        pipeline(config, seed, max_train_iter=max_train_iter, max_env_step=max_env_step, overrides=overrides,
                 exp_name=exp_name, resume=resume, quiet=quiet, trust_config=trust_config)
    if len(seeds) > 1:
        summarize_seeds(run_dirs, cfg.exp_name, cfg.env.stop_value)


def summarize_seeds(run_dirs: Sequence[str], exp_name: str, threshold: Optional[float]) -> None:
    """After a run of several seeds: the summary table of ``ding_lite summary`` (threshold: env.stop_value), printed
    and written beside the run directories as ``<exp_name>_summary.txt`` and ``.json``."""
    from ding_lite.analysis import format_summary, load_runs, summarize
    from ding_lite.utils.file_io import atomic_write_json, atomic_write_text

    rows = summarize(load_runs(run_dirs), threshold=threshold)
    text = format_summary(rows)
    atomic_write_text(text + "\n", f"{exp_name}_summary.txt")
    atomic_write_json(rows, f"{exp_name}_summary.json")
    click.echo(f"summary of {len(run_dirs)} seeds (also in {exp_name}_summary.txt and .json):\n{text}")


@main.command()
@click.argument("run_dirs", nargs=-1, required=True, metavar="RUN_DIR...")
@click.option("-o", "--out", default="learning_curves.png", show_default=True,
              help="PNG to write; with several --metric, one file per metric (<out>_<metric>.png).")
@click.option("--x", "x_axis", type=click.Choice(("env_step", "wall_time", "train_iter")), default="env_step",
              show_default=True, help="The x axis.")
@click.option("--group-by", type=click.Choice(("exp_name", "path")), default="exp_name", show_default=True,
              help="exp_name: the seeds of one experiment make one curve (mean, min-max band); path: a curve a run.")
@click.option("--metric", "metrics", multiple=True, default=("return_mean",), show_default=True,
              help="An eval.csv column to draw (repeatable): return_mean, return_std, return_min, return_max.")
def plot(run_dirs: Tuple[str, ...], out: str, x_axis: str, group_by: str, metrics: Tuple[str, ...]) -> None:
    """Learning curves from the eval.csv of runs: each RUN_DIR is a run directory or a folder of them.
    Needs matplotlib (pip install ding_lite[plot])."""
    from ding_lite.analysis import load_runs, plot_runs
    with user_errors():
        for path in plot_runs(load_runs(run_dirs), out, x=x_axis, by=group_by, metrics=metrics):
            click.echo(path)


@main.command()
@click.argument("run_dirs", nargs=-1, required=True, metavar="RUN_DIR...")
@click.option("--threshold", type=float, default=None,
              help="A return to reach: how many seeds reached it, and the env steps and wall time they took.")
@click.option("--group-by", type=click.Choice(("exp_name", "path")), default="exp_name", show_default=True,
              help="exp_name: one row per experiment over its seeds; path: one row per run.")
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON instead of a table.")
def summary(run_dirs: Tuple[str, ...], threshold: Optional[float], group_by: str, as_json: bool) -> None:
    """Per experiment over its seeds: final and best return (median; IQM with a 95% stratified-bootstrap CI),
    env steps and wall time to --threshold, throughput. Each RUN_DIR is a run directory or a folder of them."""
    from ding_lite.analysis import format_summary, load_runs, summarize
    with user_errors():
        rows = summarize(load_runs(run_dirs), threshold=threshold, by=group_by)
        click.echo(json.dumps(rows, indent=2) if as_json else format_summary(rows))


@main.command()
@click.argument("file", metavar="FILE", required=False)
@click.option("-o", "--out", default=None, help="The ding_lite config to write (default: FILE's name with "
                                                "'_ding_lite.py' instead of '.py', beside it); with --walk, the "
                                                "directory to write the ported configs to (default: a temporary one).")
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
@click.option("--walk", "walk_dir", default=None, metavar="DIZOO_DIR",
              help="Instead of FILE: port every IMPALA, ACER, SAC, discrete SAC and PPO config under a dizoo directory and "
                   "print a markdown table: ported and compiles, ported with TODOs, or refused, and what changed "
                   "that affects learning.")
def port(file: Optional[str], out: Optional[str], force: bool, walk_dir: Optional[str]) -> None:
    """Write the ding_lite version of a DI-engine config FILE (main_config and create_config): keys moved, renamed
    or removed as ding_lite's messages ask, each change a comment, and a `# TODO(port):` comment where you must
    decide. FILE's top level is run as Python to read its dicts (its imports included; its __main__ block is not):
    port only files you trust, as you would run them. Exit status 0: OUT is written and compiles with ding_lite (any
    TODOs are listed); 2: OUT is written but does not compile until you edit its TODOs, or nothing is written (FILE
    missing or broken, OUT exists without --force). See docs/porting_from_dingengine.md."""
    if walk_dir is not None:
        if file is not None:
            raise click.UsageError("give FILE or --walk DIZOO_DIR, not both")
        from ding_lite.port.walk import walk, walk_markdown
        with user_errors():
            click.echo(walk_markdown(walk(walk_dir, out)), nl=False)
        return
    if file is None:
        raise click.UsageError("Missing argument 'FILE'.")
    from ding_lite.port import port_file, report
    with user_errors():
        result, written = port_file(file, out, force)
        click.echo(report(result, file, written))
        if result.problems is not None:
            raise UserError(f"{written} does not compile yet: {result.problems}")


@main.command()
@click.argument("path", metavar="PATH")
@click.option("--format", "fmt", type=click.Choice(("torchscript", "onnx")), required=True,
              help="torchscript (a .pt file for torch.jit.load) or onnx (a .onnx file for onnxruntime).")
@click.option("-o", "--out", default=None, help="The file to write (default: <run_dir>/<checkpoint name>.pt or .onnx).")
@click.option("--with-dist", is_flag=True, help="Also output the action distribution's parameters (logits, or mu "
                                                "and sigma / log_std) after the action.")
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists (it is replaced atomically).")
@click.option("--trust-config", is_flag=True, help="The run's total_config.py may hold code and import the modules it "
                                                   "names (read as plain literals otherwise, and they are refused). "
                                                   "Only for runs you trust.")
def export(path: str, fmt: str, out: Optional[str], with_dist: bool, force: bool, trust_config: bool) -> None:
    """Export the policy of a run directory or checkpoint PATH to one self-contained file: observations in (a batch;
    one input per leaf for Dict/Tuple spaces), the deterministic action in env units out, normalisation included.
    The module is inference-only; an existing OUT is replaced only with --force. Running it needs only torch or
    onnxruntime (pip install ding_lite[export]). The run's total_config.py is read as literals, never run (see
    --trust-config). See docs/using_a_trained_policy.md."""
    from ding_lite.deploy.export import export as export_policy
    with user_errors():
        click.echo(export_policy(path, fmt, out, with_dist, force, trust_config))


@main.command("check-env")
@click.argument("env", metavar="ENV")
@click.option("--steps", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Random steps to take (episodes reset as they end).")
@click.option("-s", "--seed", type=int, default=None, help="Seed of the env and the random actions (default: the "
                                                           "config's seed, 0).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a config key, e.g. --set env.max_episode_steps=200 or env.wrappers=[...] (repeatable).")
def check_env(env: str, steps: int, seed: Optional[int], overrides: Tuple[str, ...]) -> None:
    """Check the env ENV as a run builds it (its wrappers included) before training on it: a config file (.py with
    main_config, as -c takes), a gymnasium id (CartPole-v1, minigrid:MiniGrid-Empty-5x5-v0), 'module:Name' of a
    gymnasium.Env class, or a registered env type. One line per finding with its fix: spaces, observations in their
    space, finite values, reset/step signatures, episode ends, seeding, action bounds, action masks, step time.
    Exit status 0: no errors (warnings allowed); 2: errors. See docs/custom_env.md."""
    from ding_lite.entry.check_env import check_target
    with user_errors():
        user_module_path(env if env.endswith(".py") else None)
        report, ok = check_target(env, steps, seed, overrides)
    click.echo(report)
    if not ok:
        sys.exit(2)


@main.command()
@click.option("-c", "--config", "config_path", required=True, help="Config file (.py defining main_config); its "
                                                                  "main_config may hold a tune section {path: spec}.")
@click.option("--param", "params", multiple=True, metavar="PATH=SPEC",
              help="A dimension of the search space (repeatable): loguniform(a,b), uniform(a,b), int(a,b) or "
                   "choice([..]), e.g. --param 'policy.learn.learning_rate=loguniform(1e-4,1e-2)'.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Fixed override for every trial.")
@click.option("--trials", type=int, default=20, show_default=True,
              help="Trials of the study in all (complete or pruned), over every tune process on it.")
@click.option("--jobs", type=int, default=1, show_default=True,
              help="Trials at a time, each a process with one torch thread (at most the machine's cores).")
@click.option("--env-step", "max_env_step", type=int, default=None, help="Env steps of each run of a trial.")
@click.option("--seeds", default="0", show_default=True, help="Comma-separated seeds; a trial's value is the mean "
                                                              "over them.")
@click.option("--metric", type=click.Choice(("final", "best", "auc")), default="final", show_default=True,
              help="From each run's eval.csv: the last evaluation's return, the best, or the mean over the curve.")
@click.option("--direction", type=click.Choice(("maximize", "minimize")), default="maximize", show_default=True)
@click.option("--pruner", type=click.Choice(("median", "halving", "none")), default="median", show_default=True,
              help="Stops trials early from their evaluations: median (of the trials before at the same env step), "
                   "halving (successive halving) or none.")
@click.option("--startup-trials", type=int, default=2, show_default=True,
              help="Median pruner: trials that finish before any is pruned.")
@click.option("--warmup-steps", type=int, default=0, show_default=True,
              help="Median pruner: no trial is pruned at an evaluation before this many env steps of its run.")
@click.option("--study", "study_dir", default=None, metavar="NAME",
              help="The study directory (and the study's name in the storage). Default: <exp_name>_tune.")
@click.option("--storage", default=None, metavar="URL", help="A SQLAlchemy URL (postgresql://..., sqlite:///...) "
                                                             "shared by tune processes. Default: NAME/study.db.")
@click.option("--sampler-seed", type=int, default=None, help="Seed of the sampler (TPE), for a repeatable study.")
def tune(config_path: str, params: Tuple[str, ...], overrides: Tuple[str, ...], trials: int, jobs: int,
         max_env_step: Optional[int], seeds: str, metric: str, direction: str, pruner: str, startup_trials: int,
         warmup_steps: int, study_dir: Optional[str], storage: Optional[str], sampler_seed: Optional[int]) -> None:
    """Hyperparameter search on Optuna (pip install "ding_lite[tune]"): each trial is an ordinary run directory in
    the study directory; run the same command again to continue an interrupted study. See docs/tune.md."""
    with user_errors():
        from ding_lite.config import read_config_file
        user_module_path(config_path)
        main_config, create_config = read_config_file(config_path)
        main_config = dict(main_config)
        section = main_config.pop("tune", {})
        try:
            seed_list = [int(s) for s in seeds.split(",") if s.strip()]
        except ValueError:
            raise UserError(f"--seeds {seeds!r}: expected comma-separated whole numbers, e.g. --seeds 0,1,2") from None
        try:
            import optuna  # noqa: F401
        except ImportError:
            raise UserError('ding_lite tune needs Optuna: pip install "ding_lite[tune]"') from None
        from ding_lite.tune import parse_params
        from ding_lite.tune.study import TuneOptions, run_study
        space = parse_params(params, section)
        if study_dir is None:
            from ding_lite.config import compile_config
            study_dir = f"{compile_config((main_config, create_config), overrides=list(overrides)).exp_name}_tune"
        opts = TuneOptions(study_dir=study_dir, trials=trials, jobs=jobs, env_step=max_env_step, seeds=seed_list,
                           metric=metric, direction=direction, pruner=pruner, storage=storage, sets=overrides,
                           startup_trials=startup_trials, warmup_steps=warmup_steps,
                           sampler_seed=sampler_seed)
        run_study((main_config, create_config), space, opts, say=lambda line: click.echo(line))


if __name__ == "__main__":
    main()

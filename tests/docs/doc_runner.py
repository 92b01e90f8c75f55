"""Run the doc-test plan of markdown files in this one process: ``python doc_runner.py PLAN.json RESULTS.json``.

The plan (written by test_doc_examples.py) lists the docs, each with its own directory and its steps in the order
of the document: ``file`` (write a block to a file; these come first), ``python`` (execute a block as a script,
``__name__ == "__main__"``) and ``command`` (``ding_lite ...`` through the CLI's own entry point, ``python
-c``/``-m``/``script.py`` as Python would). Every step must succeed (exit status 0). One process for all docs
saves a Python-and-torch start per doc; between docs, the modules a doc's directory provided are unloaded.

Training budgets are scaled down (see ``capped``) by wrapping ``TrainingRun.train``, the one place both pipelines
apply them; ``-m parallel`` runs use at most ``COLLECTOR_CAP`` collectors by default. Prints ``DOCTEST FILE``,
``DOCTEST RUN`` and ``DOCTEST FAILED <file>:<line>`` (with the error) lines, and writes each doc's failures to
RESULTS.json as it goes.
"""
import contextlib
import json
import os
import runpy
import sys
import time
import traceback
from typing import Any, Dict, Iterator, List, Optional

# A run gets a tenth of the budget the doc gives it, at most these; a run without a budget gets these.
ENV_STEP_CAP = 1000
TRAIN_ITER_CAP = 50
COLLECTOR_CAP = 2
PYTHON = ("python", "python3")


def capped(budget: Optional[int], limit: int) -> int:
    """The budget a doc run gets: a tenth of the doc's (so a resumed run still goes further), at most ``limit``."""
    return limit if budget is None else max(1, min(limit, budget // 10))


def install_caps() -> None:
    """Scale every training budget down, and cap the default number of parallel collectors."""
    from ding_lite.entry import parallel, training_loop

    train = training_loop.TrainingRun.train

    def capped_train(self: Any, max_env_step: Optional[int], max_train_iter: Optional[int]) -> str:
        return train(self, capped(max_env_step, ENV_STEP_CAP), capped(max_train_iter, TRAIN_ITER_CAP))

    training_loop.TrainingRun.train = capped_train
    default_collector_num = parallel.default_collector_num  # an AttributeError here: update this patch
    parallel.default_collector_num = lambda: min(COLLECTOR_CAP, default_collector_num())


@contextlib.contextmanager
def argv_as(argv: List[str]) -> Iterator[None]:
    """``sys.argv`` as a script started with ``argv`` sees it."""
    old, sys.argv = sys.argv, list(argv)
    try:
        yield
    finally:
        sys.argv = old


def run_python(text: str, filename: str, line: int) -> None:
    """Execute ``text`` as a script (``__name__ == "__main__"``) whose lines keep their numbers in ``filename``."""
    exec(compile("\n" * (line - 1) + text, filename, "exec"), {"__name__": "__main__", "__builtins__": __builtins__})


def run_command(argv: List[str], where: str) -> int:
    """Run one command as the shell would; its exit status."""
    prog, args = argv[0], argv[1:]
    try:
        if prog == "ding_lite":
            from ding_lite.cli import main
            main.main(args=args, prog_name="ding_lite")
        elif prog in PYTHON and args[:1] == ["-c"]:
            with argv_as(["-c"] + args[2:]):
                run_python(args[1], where, 1)
        elif prog in PYTHON and args[:1] == ["-m"]:
            with argv_as(args[1:]):
                runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        elif prog in PYTHON and args:
            with argv_as(args):
                runpy.run_path(args[0], run_name="__main__")
        else:
            raise RuntimeError(f"the doc test cannot run '{prog}': annotate the block or line with "
                               f"<!-- doctest: skip (REASON) --> or skip-line")
    except SystemExit as err:
        return 0 if err.code is None else (err.code if isinstance(err.code, int) else 1)
    return 0


def run_step(step: Dict[str, Any]) -> Optional[str]:
    """Run one step; None if it succeeded, else what went wrong."""
    where = f"{step['path']}:{step['line']}"
    try:
        if step["kind"] == "file":
            with open(step["name"], "w", encoding="utf-8") as f:
                f.write(step["text"])
            compile(step["text"], step["name"], "exec")  # at least valid Python
        elif step["kind"] == "python":
            with argv_as([step["path"]]):
                run_python(step["text"], step["path"], step["line"])
        else:
            status = run_command(step["argv"], where)
            if status != 0:
                return f"exit status {status}"
    except BaseException:  # noqa: B036 (a doc block's KeyboardInterrupt is a failure of the block too)
        return traceback.format_exc()
    return None


def run_doc(doc: Dict[str, Any]) -> List[str]:
    """Run one markdown file's steps in its directory; the failures (all of them with ``keep_going``, else the
    first, after which the file's later steps, which may depend on it, are not run)."""
    os.chdir(doc["dir"])
    failures: List[str] = []
    for step in doc["steps"]:
        label = step["text"] if step["kind"] == "command" else f"{step['kind']} block"
        where = f"{step['path']}:{step['line']}"
        print(f"DOCTEST RUN {where}: {label}", flush=True)
        start = time.perf_counter()
        problem = run_step(step)
        sys.stdout.flush()
        sys.stderr.flush()
        print(f"DOCTEST TOOK {time.perf_counter() - start:.1f} s", flush=True)
        if problem is not None:
            failures.append(f"{where}: {label}: {problem.strip().splitlines()[-1]}")
            print(f"DOCTEST FAILED {where}: {label}\n{problem}", flush=True)
            if not doc["keep_going"]:
                break
    return failures


def forget_doc(workdir: str, sys_path: List[str]) -> None:
    """Unload the modules a doc's directory provided and restore sys.path, so the next doc starts clean."""
    for name, module in list(sys.modules.items()):
        if (getattr(module, "__file__", None) or "").startswith(workdir + os.sep):
            del sys.modules[name]
    sys.path[:] = sys_path


def main(plan_path: str, results_path: str) -> int:
    """Run every doc of the plan (each in its own directory) and write ``{path: failures}`` to ``results_path``."""
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    install_caps()
    results: Dict[str, List[str]] = {}
    sys_path = list(sys.path)
    for doc in plan:
        print(f"DOCTEST FILE {doc['path']}", flush=True)
        results[doc["path"]] = run_doc(doc)
        forget_doc(os.path.realpath(doc["dir"]), sys_path)
        with open(results_path, "w", encoding="utf-8") as f:
            json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

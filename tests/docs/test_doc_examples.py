"""Every command and Python block of README.md, CONTRIBUTING.md and docs/*.md runs, so the docs cannot drift from the code.

How (the details are in doc_blocks.py and doc_runner.py):

* The blocks are fenced ```python blocks, and command blocks: indented blocks (or ```sh / ```console) of
  ``ding_lite``, ``python``, ``pip``, ... lines. Output and diagrams are not blocks.
* Each markdown file runs in its own temporary directory holding copies of ``dizoo_configs/`` and
  ``docs/examples/``, in the order of the document (the reader's order: a command that only works after an
  earlier one must come after it). All files run in one Python process, which saves a start of Python and torch
  per file; ``ding_lite`` commands go through the CLI's entry point, exit status included. Blocks that the doc says to save as a file (first line
  ``# name.py``, or ``<!-- doctest: file NAME -->``) are written to that file before anything runs.
* Small budgets: every training run gets a tenth of the budget the doc gives it, at most 1,000 env steps and 50
  train iterations, and a run without a budget gets those caps (doc_runner.capped). Nothing else is changed.
* What cannot run here says so in the markdown, visibly to anyone editing it:
  ``<!-- doctest: skip (REASON) -->`` before a block, ``<!-- doctest: skip-line "TEXT" (REASON) -->`` for some of
  its commands. A skip without a reason is an error, and so is a command the test cannot run that is not skipped.
  A command that needs an optional extra that is not installed (``ding_lite plot`` without matplotlib) is skipped
  at run time.
"""
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from typing import Dict, List, Tuple

import pytest

from doc_blocks import Block, DocFormatError, read_blocks

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, os.pardir, os.pardir))
RUNNER = os.path.join(HERE, "doc_runner.py")
TIMEOUT_S = 600
# A command that contains the key needs the module (an optional extra): skipped where it is not installed.
EXTRAS = {"ding_lite plot": "matplotlib", "--backend ray": "ray", "tictactoe": "pettingzoo", "pettingzoo": "pettingzoo"}


def markdown_files() -> List[str]:
    """README.md, CONTRIBUTING.md and docs/*.md, relative to the repository."""
    return ["README.md", "CONTRIBUTING.md"] + sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "docs", "*.md")))


def blocks_of(path: str) -> List[Block]:
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return read_blocks(f.read(), path)


def missing_extra(command: str) -> str:
    """The module an optional extra installs that ``command`` needs and this environment lacks, or ''."""
    return next((module for key, module in EXTRAS.items()
                 if key in command and importlib.util.find_spec(module) is None), "")


def plan(blocks: List[Block]) -> Tuple[List[Dict], List[str]]:
    """The runner's steps for ``blocks`` (files first), and the commands skipped for want of an extra."""
    files, steps, missing = [], [], []
    for block in blocks:
        if block.skip is not None:
            continue
        if block.file is not None:
            files.append(dict(kind="file", path=block.path, line=block.line, name=block.file, text=block.text))
        elif block.kind == "python":
            steps.append(dict(kind="python", path=block.path, line=block.line, text=block.text))
        for command in block.commands:
            if command.skip is None and missing_extra(" ".join(command.argv)):
                missing.append(f"{block.path}:{command.line}: {command.text}")
            elif command.skip is None:
                steps.append(dict(kind="command", path=block.path, line=command.line, argv=command.argv,
                                  text=command.text))
    return files + steps, missing


def run_docs(docs: Dict[str, List[Block]], workdir: str, keep_going: bool = False) -> Tuple[Dict, Dict, str]:
    """Run the blocks of each doc with doc_runner.py, all in one process, each doc in its own directory under
    ``workdir`` holding copies of dizoo_configs/ and docs/examples/. Returns each doc's failures (a doc missing
    from it did not finish: see the output), its output, and the whole output."""
    entries = []
    for i, (path, blocks) in enumerate(docs.items()):
        doc_dir = os.path.join(workdir, f"doc{i}_{os.path.basename(path).replace('.', '_')}")
        shutil.copytree(os.path.join(REPO, "dizoo_configs"), os.path.join(doc_dir, "dizoo_configs"))
        shutil.copytree(os.path.join(REPO, "docs", "examples"), os.path.join(doc_dir, "docs", "examples"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        entries.append(dict(path=path, dir=doc_dir, keep_going=keep_going, steps=plan(blocks)[0]))
    plan_path, results_path = os.path.join(workdir, "plan.json"), os.path.join(workdir, "results.json")
    with open(plan_path, "w", encoding="utf-8") as f:
        json.dump(entries, f)
    try:
        res = subprocess.run([sys.executable, RUNNER, plan_path, results_path], cwd=workdir, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
        output = res.stdout
    except subprocess.TimeoutExpired as err:
        output = (err.stdout or b"").decode(errors="replace") + f"\nDOCTEST TIMEOUT after {TIMEOUT_S} s"
    results = {}
    if os.path.exists(results_path):
        with open(results_path, encoding="utf-8") as f:
            results = json.load(f)
    sections = {path: output[output.find(f"DOCTEST FILE {path}\n"):] for path in docs}
    for path, text in sections.items():
        following = text.find("DOCTEST FILE ", 1)
        sections[path] = text if following < 0 else text[:following]
    return results, sections, output


def runnable_files() -> List[str]:
    return [path for path in markdown_files() if plan(blocks_of(path))[0]]


@pytest.fixture(scope="session")
def doc_run(request, tmp_path_factory) -> Tuple[Dict, Dict, str]:
    """One run of the docs that this session's tests select (all of them unless -k picks some)."""
    selected = {item.callspec.params["path"] for item in request.session.items
                if item.originalname == "test_doc_blocks_run" and hasattr(item, "callspec")}
    return run_docs({path: blocks_of(path) for path in runnable_files() if path in selected},
                    str(tmp_path_factory.mktemp("docs")))


@pytest.mark.slow
@pytest.mark.parametrize("path", runnable_files())
def test_doc_blocks_run(path, doc_run):
    results, sections, output = doc_run
    assert path in results, f"the doc test did not finish {path}:\n{sections[path][-6000:] or output[-6000:]}"
    failed_at = sections[path].find("DOCTEST FAILED")
    assert not results[path], f"{path} fails as written: {results[path]}\n{sections[path][failed_at:][-6000:]}"
    _, missing = plan(blocks_of(path))
    if missing:
        pytest.skip(f"ran all but these commands, whose extras are not installed: {missing}")


def test_every_block_runs_or_says_why():
    """Every block and command is run, or skipped with a reason; a command the runner cannot run is skipped."""
    skipped, run = [], 0
    for path in markdown_files():
        for block in blocks_of(path):
            commands = block.commands or [None]
            for command in commands:
                reason = block.skip or (command.skip if command else None)
                if reason is not None:
                    skipped.append((f"{path}:{command.line if command else block.line}", reason))
                    continue
                run += 1
                if command is not None:
                    assert command.problem is None, (f"{path}:{command.line}: {command.problem}: "
                                                     f"'{command.text}'; annotate it with a skip and its reason")
    assert all(reason for _, reason in skipped)
    assert run > len(skipped), f"most doc blocks should run; {len(skipped)} are skipped: {skipped}"


def test_annotations_are_checked():
    with pytest.raises(DocFormatError, match="gives no reason"):
        read_blocks("<!-- doctest: skip -->\n\n    ding_lite -m serial -c x.py\n", "x.md")
    with pytest.raises(DocFormatError, match="matches no command"):
        read_blocks('<!-- doctest: skip-line "pip" (why) -->\n\n    ding_lite -m serial -c x.py\n', "x.md")
    with pytest.raises(DocFormatError, match="no block follows"):
        read_blocks("<!-- doctest: skip (why) -->\nSome text.\n", "x.md")
    blocks = read_blocks('Text:\n\n<!-- doctest: skip-line "pip" (no network) -->\n\n    pip install x  # a comment\n'
                         '    ding_lite -m serial -c a.py \\\n        -s 0\n\n```python\n# my_env.py\nx = 1\n```\n'
                         "\n    [run] output, not a command\n", "x.md")
    assert [(b.kind, b.line, b.file) for b in blocks] == [("commands", 5, None), ("python", 10, "my_env.py")]
    assert [(c.argv, c.line, c.skip) for c in blocks[0].commands] == [
        (["pip", "install", "x"], 5, "no network"), (["ding_lite", "-m", "serial", "-c", "a.py", "-s", "0"], 6, None)]


def test_a_wrong_block_fails(tmp_path):
    """The test catches a doc that drifts: a misspelt key in a command, and a misspelt name in a Python block."""
    doc = ("    ding_lite -m serial -c dizoo_configs/cartpole_impala.py -s 0 --set policy.learn.learning_rat=0.1\n\n"
           "```python\nfrom ding_lite.entry import serial_pipelin\n```\n")
    results, sections, _ = run_docs({"wrong.md": read_blocks(doc, "wrong.md")}, str(tmp_path), keep_going=True)
    assert len(results["wrong.md"]) == 2
    assert "DOCTEST FAILED wrong.md:1: ding_lite" in sections["wrong.md"] and "exit status 2" in sections["wrong.md"]
    assert "did you mean policy.learn.learning_rate?" in sections["wrong.md"]
    assert "DOCTEST FAILED wrong.md:4: python block" in sections["wrong.md"]
    assert "cannot import name 'serial_pipelin'" in sections["wrong.md"]

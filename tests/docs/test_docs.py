"""The docs cannot go stale silently: the config reference lists every compiled key, and every relative link resolves.

* Every key path of the compiled IMPALA config (sections and leaves, e.g. ``policy.learn.learner.hook``) appears in
  docs/configs.md in backticks, and so does every entry of the DI-engine compatibility tables in config/compat.py.
* Every relative link in docs/*.md, README.md and CONTRIBUTING.md points at an existing file, and an anchor (``file.md#section``)
  at an existing heading of that file (GitHub's heading ids).
"""
import fnmatch
import os
import re
import subprocess
import unicodedata
from typing import Dict, Iterator, List, Mapping, Tuple

import pytest

from ding_lite.config import compile_config
from ding_lite.config import compat

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
DOCS = os.path.join(REPO, "docs")
CONFIGS_MD = os.path.join(DOCS, "configs.md")

# The config the reference documents: IMPALA on a gymnasium env, once with each env manager (the 'subprocess'
# manager adds env.manager.context).
REFERENCE_CONFIGS = [
    (dict(env=dict(env_id="CartPole-v1")), dict(policy=dict(type="impala"))),
    (dict(env=dict(env_id="CartPole-v1")), dict(policy=dict(type="impala"), env_manager=dict(type="subprocess"))),
]


def key_paths(tree: Mapping, prefix: Tuple[str, ...] = ()) -> Iterator[str]:
    """Dotted paths of every key of a nested mapping, sections included."""
    for key, value in tree.items():
        path = prefix + (str(key),)
        yield ".".join(path)
        if isinstance(value, Mapping):
            yield from key_paths(value, path)


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def strip_code_blocks(text: str) -> str:
    """The markdown text without fenced code blocks (their '#' lines are not headings, their brackets not links)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return "\n".join(out)


def heading_ids(text: str) -> List[str]:
    """GitHub's ids of the markdown headings in ``text``: lower case, punctuation dropped, spaces to '-', repeats
    numbered ``-1``, ``-2``..."""
    ids: List[str] = []
    seen: Dict[str, int] = {}
    for line in strip_code_blocks(text).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1))  # a link in a heading: its text
        title = title.replace("`", "").replace("*", "").strip().lower()
        slug = "".join(c for c in title if c in " -_" or unicodedata.category(c)[0] in "LN").replace(" ", "-")
        if slug in seen:
            seen[slug] += 1
            slug = f"{slug}-{seen[slug]}"
        else:
            seen[slug] = 0
        ids.append(slug)
    return ids


def markdown_files() -> List[str]:
    files = sorted(os.path.join(DOCS, name) for name in os.listdir(DOCS) if name.endswith(".md"))
    top = [os.path.join(REPO, name) for name in ("README.md", "CONTRIBUTING.md")]
    return files + [path for path in top if os.path.isfile(path)]


def relative_links(path: str) -> List[str]:
    """Targets of the inline links ``[text](target)`` in a markdown file that are not URLs."""
    text = re.sub(r"`[^`\n]*`", "", strip_code_blocks(read(path)))  # no links inside inline code either
    targets = re.findall(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", text)
    return [t for t in targets if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", t)]  # http:, https:, mailto: ...


def test_expected_docs_exist():
    for name in ("index.md", "quickstart.md", "configs.md", "writing_a_policy.md", "architecture.md",
                 "benchmarks.md"):
        assert os.path.isfile(os.path.join(DOCS, name)), f"docs/{name} is missing"


@pytest.mark.parametrize("main_config,create_config", REFERENCE_CONFIGS)
def test_config_reference_lists_every_compiled_key(main_config, create_config):
    doc = read(CONFIGS_MD)
    cfg = compile_config(main_config, create_config)
    missing = [p for p in key_paths(cfg) if f"`{p}`" not in doc]
    assert not missing, (f"docs/configs.md does not document these keys of the compiled IMPALA config (add a row "
                         f"with the key in backticks to the config reference): {missing}")


def test_config_reference_lists_every_di_engine_compat_entry():
    doc = read(CONFIGS_MD)
    names = (list(compat.MAIN_CONFIG_KEYS) + list(compat.CREATE_CONFIG_SECTIONS) +
             list(compat.DI_ENGINE_BUFFER_TYPES) + list(compat.DI_ENGINE_MANAGER_TYPES) +
             list(compat.DI_ENGINE_MANAGER_TYPES.values()) + list(compat.DIZOO_ENV_IDS) +
             list(compat.DIZOO_ENV_IDS.values()) + list(compat.IGNORED_KEYS))
    missing = [n for n in names if f"`{n}`" not in doc]
    assert not missing, f"docs/configs.md does not mention these entries of ding_lite/config/compat.py: {missing}"


def test_heading_ids_follow_github():
    text = "# A `b.c`: d (e)\n```\n# not a heading\n```\n## A `b.c`: d (e)\n### Termination vs. truncation"
    assert heading_ids(text) == ["a-bc-d-e", "a-bc-d-e-1", "termination-vs-truncation"]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: os.path.relpath(p, REPO))
def test_relative_links_resolve(path):
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(dest):
            broken.append(f"{target} (no file {os.path.relpath(dest, REPO)})")
        elif anchor and dest.endswith(".md") and anchor not in heading_ids(read(dest)):
            broken.append(f"{target} (no heading with id '{anchor}' in {os.path.relpath(dest, REPO)})")
    assert not broken, f"{os.path.relpath(path, REPO)} has broken links: {broken}"


# A result path a doc cites; not one after "<commit>:" (``git show 773cc95:benchmarks/results/x.txt``: in the history).
# a path from the repository's root, or a docs page's link up to it (``../benchmarks/...``); not a URL's tail
RESULT_PATH = re.compile(r"(?:(?<=\.\./)|(?<![\w:/.]))benchmarks/(?:studies/)?results/[A-Za-z0-9_./{},*-]*")


def expand_braces(path: str) -> List[str]:
    """``a_seed{0,1}/`` -> ``a_seed0/``, ``a_seed1/`` (the shell's brace expansion, one level at a time)."""
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    return [p for alt in match.group(1).split(",")
            for p in expand_braces(path[:match.start()] + alt + path[match.end():])]


def committed_files() -> set:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: which result files are committed is unknown")
    files = set(listed.stdout.splitlines())
    folders = {os.path.dirname(f) for f in files}
    while True:  # every ancestor folder of a committed file
        more = {os.path.dirname(f) for f in folders} - folders - {""}
        if not more:
            break
        folders |= more
    return files | folders | {f + "/" for f in folders}


@pytest.mark.parametrize("path", markdown_files() + [os.path.join(REPO, "benchmarks", "studies", "README.md")],
                         ids=lambda p: os.path.relpath(p, REPO))
def test_the_result_files_a_doc_names_are_committed(path):
    """A path under benchmarks/results/ that a doc cites (``runs/<name>_seed{0,1}/`` expanded, ``*`` matched) is in git, not only on
    the machine that wrote it: .gitignore ignores run directories (``*_seed[0-9]*/``), which once kept the files of
    eight cited runs out of every commit."""
    if not os.path.isfile(path):
        pytest.skip(f"no {os.path.relpath(path, REPO)}")
    committed = committed_files()
    cited = {p.rstrip(".,") for m in RESULT_PATH.findall(read(path)) for p in expand_braces(m)}
    missing = sorted(p for p in cited if not (p in committed or p.rstrip("/") in committed or
                                             ("*" in p and fnmatch.filter(committed, p))))
    assert not missing, f"{os.path.relpath(path, REPO)} cites result files that are not committed: {missing}"


def test_reliability_table_names_existing_tests():
    """Every test that docs/reliability.md's failure table cites exists (so the table cannot drift from the suite)."""
    import ast
    import re

    text = read(os.path.join(DOCS, "reliability.md"))
    # `dir/test_file.py`, `dir/test_file.py::test_name`, or `::test_name` (a test of the file cited just before)
    cited = [(m.group(1), m.group(2)) for m in re.finditer(r"`([a-z_]+/test_[a-z_]+\.py)?(?:::(\w+))?`", text)
             if m.group(1) or m.group(2)]
    assert len(cited) >= 20, cited
    last_file = None
    for path, name in cited:
        path = path or last_file
        last_file = path
        full = os.path.join(REPO, "tests", path)
        assert os.path.isfile(full), f"docs/reliability.md cites {path}, which does not exist"
        if name:
            tree = ast.parse(read(full))
            names = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
            assert name in names, f"docs/reliability.md cites {path}::{name}, which does not exist"


def ci_commands() -> List[str]:
    """The ``python -m pytest`` and ``python -m ruff`` lines of .ci/run, as written there."""
    with open(os.path.join(REPO, ".ci", "run")) as f:
        return [line.strip() for line in f if re.match(r"\s*python -m (pytest|ruff)\b", line)]


def test_the_readme_gives_the_test_commands_ci_runs():
    """CI runs "the README's test command" (the brief): every pytest and ruff line of .ci/run is in README.md, as
    written there, so that a change to what CI selects (``-m "not ray and not long"``) shows in the README too."""
    commands = ci_commands()
    assert len(commands) == 3, commands  # lint, pass 1, the Ray pass
    with open(os.path.join(REPO, "README.md")) as f:
        readme = [line.split("#")[0].strip() for line in f]
    missing = [c for c in commands if c not in readme]
    assert not missing, f"README.md does not show these commands of .ci/run: {missing}"

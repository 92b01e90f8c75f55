"""The runnable blocks of a markdown file: fenced ```python blocks and indented (or ```sh / ```console) command blocks.

A command block is an indented block (or a fenced sh/console/bash block) whose first line, comments aside, starts
with a command (``ding_lite``, ``python``, ``pip``, ...); indented blocks of anything else (program output, diagrams)
are not blocks. Annotations, as HTML comments on the lines just before a block (GitHub does not render them):

* ``<!-- doctest: skip (REASON) -->``: the block is not run; REASON is required.
* ``<!-- doctest: skip-line "TEXT" (REASON) -->``: the block's commands that contain TEXT are not run.
* ``<!-- doctest: file NAME -->``: the python block is written to NAME instead of run. A python block whose first line
  is a comment naming a file (``# my_env.py``) is written to that file too, as the docs tell the reader to do.
"""
import re
import shlex
import textwrap
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

COMMAND_WORDS = ("ding_lite", "python", "python3", "pip", "tensorboard", "ray")
RUNNABLE = ("ding_lite", "python", "python3")  # what doc_runner.py can run
SHELL_FENCES = ("sh", "bash", "console", "shell")
ANNOTATION = re.compile(r"^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$")
FILE_COMMENT = re.compile(r"^#\s*([\w./-]+\.py)\s*$")


class DocFormatError(ValueError):
    """A block or an annotation the doc test cannot read: fix the markdown."""


@dataclass
class Command:
    """One command of a command block: argv, as the shell would split it, and the line it starts on."""
    argv: List[str]
    line: int
    skip: Optional[str] = None
    problem: Optional[str] = None  # why the doc test cannot run it (shell syntax): then it must be skipped

    @property
    def text(self) -> str:
        return " ".join(shlex.quote(a) for a in self.argv)


@dataclass
class Block:
    """A runnable block: ``kind`` is 'python' or 'commands'; ``line`` is its first line in the file (1-based)."""
    path: str
    line: int
    kind: str
    text: str
    skip: Optional[str] = None
    file: Optional[str] = None
    commands: List[Command] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def parse_annotation(text: str, where: str) -> Tuple[str, str, str]:
    """(verb, argument, reason) of an annotation's text, e.g. ('skip-line', 'pip install', 'no network')."""
    match = re.fullmatch(r'(skip|skip-line|file)(?:\s+"([^"]+)")?(?:\s+([\w./-]+))?\s*(?:\((.*)\))?', text, re.S)
    if match is None:
        raise DocFormatError(f"{where}: cannot read the annotation '{text}'; write skip (REASON), "
                             f'skip-line "TEXT" (REASON) or file NAME')
    verb, quoted, name, reason = match.groups()
    reason = (reason or "").strip()
    if verb in ("skip", "skip-line") and not reason:
        raise DocFormatError(f"{where}: '{text}' gives no reason; every skip says why, in parentheses")
    if verb == "skip-line" and not quoted:
        raise DocFormatError(f'{where}: skip-line needs the text of the lines to skip, in quotes')
    if verb == "file" and not name:
        raise DocFormatError(f"{where}: file needs the name to write the block to")
    return verb, quoted or name or "", reason


def split_commands(text: str, first_line: int, where: str) -> List[Command]:
    """The commands of a command block: ``\\`` continues a line, ``&&`` separates commands, ``#`` starts a comment."""
    commands: List[Command] = []
    logical, start = "", first_line
    for offset, raw in enumerate(text.splitlines()):
        if not logical:
            start = first_line + offset
        logical += raw.rstrip()
        if logical.endswith("\\"):
            logical = logical[:-1] + " "
            continue
        words = shlex.split(logical, comments=True) if logical.strip() else []
        logical = ""
        while words:
            argv = words[:words.index("&&")] if "&&" in words else words
            words = words[len(argv) + 1:]
            if argv[0] not in COMMAND_WORDS:
                raise DocFormatError(f"{where}: line {start}: '{' '.join(argv)}' is not a command "
                                     f"({', '.join(COMMAND_WORDS)}); keep output in blocks of its own")
            problem = None
            if argv[0] not in RUNNABLE:
                problem = f"the doc test runs {' and '.join(RUNNABLE[:2])} commands only"
            elif any(re.search(r"[|;<>`$]", word) for word in argv):
                problem = "shell syntax the doc test does not run"
            commands.append(Command(argv, start, problem=problem))
    return commands


def _is_command_block(lines: List[str]) -> bool:
    first = next((line.strip() for line in lines if line.strip() and not line.strip().startswith("#")), "")
    return first.split(" ", 1)[0] in COMMAND_WORDS


def read_blocks(text: str, path: str) -> List[Block]:
    """Every runnable block of the markdown ``text`` (from file ``path``), with its annotations applied."""
    lines = text.splitlines()
    blocks: List[Block] = []
    pending: List[Tuple[str, str, str]] = []
    pending_where = ""
    i, prev_blank = 0, True
    while i < len(lines):
        line = lines[i]
        annotation = ANNOTATION.match(line)
        if annotation:
            pending_where = f"{path}:{i + 1}"
            pending.append(parse_annotation(annotation.group(1), pending_where))
            i += 1
            continue
        fence = re.match(r"^(\s*)```(\w*)\s*$", line)
        block: Optional[Block] = None
        if fence:
            lang = fence.group(2)
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
            if end is None:
                raise DocFormatError(f"{path}:{i + 1}: a code fence that is never closed")
            body = textwrap.dedent("\n".join(lines[i + 1:end]))
            if lang == "python":
                block = Block(path, i + 2, "python", body + "\n")
            elif lang in SHELL_FENCES and _is_command_block(body.splitlines()):
                block = Block(path, i + 2, "commands", body)
            i = end + 1
        elif prev_blank and line.startswith("   ") and line.strip():
            indent = " " * (len(line) - len(line.lstrip()))  # the block ends at a line indented less
            end = i
            while end < len(lines) and (lines[end].startswith(indent) or not lines[end].strip()):
                end += 1
            while not lines[end - 1].strip():
                end -= 1
            if _is_command_block(lines[i:end]):
                block = Block(path, i + 1, "commands", textwrap.dedent("\n".join(lines[i:end])))
            i = end
        else:
            prev_blank = not line.strip()
            if pending and line.strip():
                raise DocFormatError(f"{pending_where}: an annotation that no block follows")
            i += 1
            continue
        prev_blank = False
        if block is None:
            if pending:
                raise DocFormatError(f"{pending_where}: an annotation before a block that is not run "
                                     f"(output, a diagram, or a language other than python and sh)")
            continue
        _annotate(block, pending)
        pending = []
        blocks.append(block)
    if pending:
        raise DocFormatError(f"{pending_where}: an annotation that no block follows")
    return blocks


def _annotate(block: Block, annotations: List[Tuple[str, str, str]]) -> None:
    if block.kind == "commands":
        block.commands = split_commands(block.text, block.line, block.where)
    elif (match := FILE_COMMENT.match(block.text.split("\n", 1)[0])):
        block.file = match.group(1)
    for verb, arg, reason in annotations:
        if verb == "skip":
            block.skip = reason
        elif verb == "file":
            if block.kind != "python":
                raise DocFormatError(f"{block.where}: 'file' annotates python blocks only")
            block.file = arg
        else:
            hits = [c for c in block.commands if arg in c.text or arg in " ".join(c.argv)]
            if not hits:
                raise DocFormatError(f'{block.where}: skip-line "{arg}" matches no command of the block')
            for command in hits:
                command.skip = reason

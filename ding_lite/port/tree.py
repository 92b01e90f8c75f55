"""The output tree of ``ding_lite port``: config sections that keep their keys in order, with comments where keys
were, and their rendering as Python source (``dict(key=...)``, comments above the keys)."""
import keyword
import textwrap
from dataclasses import dataclass, field
from typing import Any, List, Mapping, Optional, Tuple

from ding_lite.config.save import format_value

WIDTH = 118
INDENT = "    "


# ---- the output tree: sections keep their keys in order, with comments where keys were -------------------------
@dataclass
class Entry:
    """One line of a section: a key (``value`` a scalar, a list or a ``Section``) with comments above it, or, with
    ``key`` None, comments alone (where a removed key was)."""

    key: Optional[str]
    value: Any = None
    notes: List[str] = field(default_factory=list)


@dataclass
class Section:
    entries: List[Entry] = field(default_factory=list)

    def find(self, key: str) -> Optional[Entry]:
        return next((e for e in self.entries if e.key == key), None)

    def has(self, key: str) -> bool:
        return self.find(key) is not None

    def note(self, text: str) -> None:
        self.entries.append(Entry(None, notes=[text]))

    def put(self, key: str, value: Any, note: Optional[str] = None, first: bool = False) -> Entry:
        entry = Entry(key, value, [note] if note else [])
        self.entries.insert(0, entry) if first else self.entries.append(entry)
        return entry

    def child(self, key: str) -> "Section":
        """The sub-section ``key``, made (at the end) if absent."""
        entry = self.find(key)
        if entry is None:
            entry = self.put(key, Section())
        return entry.value

    def to_plain(self) -> dict:
        return {e.key: e.value.to_plain() if isinstance(e.value, Section) else e.value
                for e in self.entries if e.key is not None}


def to_section(tree: Mapping) -> Section:
    return Section([Entry(k, to_section(v) if isinstance(v, Mapping) and v else v) for k, v in tree.items()])


def entry_at(root: Section, path: Tuple[str, ...]) -> Optional[Entry]:
    node: Any = root
    entry = None
    for key in path:
        if not isinstance(node, Section):
            return None
        entry = node.find(key)
        if entry is None:
            return None
        node = entry.value
    return entry


def short(value: Any, limit: int = 70) -> str:
    text = format_value(value) if isinstance(value, (Mapping, list, tuple)) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ---- writing ---------------------------------------------------------------------------------------------------------
def _comment_lines(text: str, pad: str) -> List[str]:
    first, rest = f"{pad}# ", f"{pad}#   "
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest, break_long_words=False,
                         break_on_hyphens=False)


def is_identifier(key: Any) -> bool:
    return isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key)


def _has_notes(section: Section) -> bool:
    """Whether a section has comments inside (then it is written one key per line, else as compactly as fits)."""
    return any(e.notes or (isinstance(e.value, Section) and _has_notes(e.value)) for e in section.entries)


def render_section(section: Section, depth: int) -> List[str]:
    """The lines of the keys of ``section`` (written as ``dict(key=...)``, or ``{'key': ...}`` where a key is no
    identifier), each with its comments above it."""
    pad = INDENT * depth
    named = all(is_identifier(e.key) for e in section.entries if e.key is not None)
    lines: List[str] = []
    for entry in section.entries:
        for note in entry.notes:
            lines.extend(_comment_lines(note, pad))
        if entry.key is None:
            continue
        prefix = f"{entry.key}=" if named else f"{entry.key!r}: "
        if isinstance(entry.value, Section) and _has_notes(entry.value):
            inner_named = all(is_identifier(e.key) for e in entry.value.entries if e.key is not None)
            lines.append(f"{pad}{prefix}{'dict(' if inner_named else '{'}")
            lines.extend(render_section(entry.value, depth + 1))
            lines.append(f"{pad}{')' if inner_named else '}'},")
        else:
            value = entry.value.to_plain() if isinstance(entry.value, Section) else entry.value
            lines.append(f"{pad}{prefix}{format_value(value, len(pad), str(entry.key), len(prefix))},")
    return lines


# ---- edits of a port's main config (port.main) by dotted path ------------------------------------------------------
def path_of(dotted: str) -> tuple:
    """'policy.learn.x' -> ('policy', 'learn', 'x')."""
    return tuple(dotted.split("."))


def section_at(root: Section, path: tuple) -> Optional[Section]:
    """The section at ``path``, made where absent; None where a value sits on the way."""
    node = root
    for key in path:
        node = node.child(key)
        if not isinstance(node, Section):
            return None
    return node


def take(port: Any, source: str, note: Optional[str] = None) -> Any:
    """Remove the key at ``source`` (leaving ``note``, if any, where it was); its value, or None when absent."""
    path = path_of(source)
    parent = entry_at(port.main, path[:-1])
    if parent is None or not isinstance(parent.value, Section) or not parent.value.has(path[-1]):
        return None
    section = parent.value
    entry = section.find(path[-1])
    section.entries[section.entries.index(entry)] = Entry(None, notes=entry.notes + ([note] if note else []))
    return entry.value


def set_value(port: Any, dest: str, value: Any, note: str, summary: str) -> None:
    """Write ``value`` at ``dest`` (made where absent) with ``note`` beside it, and ``summary`` in the port's report;
    a TODO where a value sits on the way."""
    path = path_of(dest)
    section = section_at(port.main, path[:-1])
    if section is None:
        port.todos.append(f"{dest}={short(value)}: {note}")
        return
    existing = section.find(path[-1])
    if existing is not None:
        existing.value = value
        existing.notes.append(note)
    else:
        section.put(path[-1], value, note)
    port.changes.append(summary)

"""'Did you mean ...?' suggestions for misspelt names."""
import difflib
from typing import Iterable, Optional


def closest(name: str, candidates: Iterable[str]) -> Optional[str]:
    """The candidate nearest to ``name`` (case-insensitive), or None if nothing is reasonably close."""
    candidates = list(candidates)
    lowered = {c.lower(): c for c in candidates}
    match = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``'; did you mean X?'`` when a close candidate exists, else an empty string."""
    best = closest(name, candidates)
    return f"; did you mean {best}?" if best else ""

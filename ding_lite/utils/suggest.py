"""'Did you mean ...?' suggestions for misspelt names.

A suggestion must look like a typo of the name, not merely share most of its letters: besides difflib's similarity,
the edit distance (insertions, deletions, substitutions and swaps of neighbours, case ignored) may be at most
``max(2, len(candidate) // 4)``. So 'learning_rat' -> 'learning_rate' and 'CartPol-v1' -> 'CartPole-v1' are suggested,
but 'env_family' is not sent to 'env_id', nor 'expert_random_collect_size' to 'random_collect_size': a key with a word
more, or another word, is a different key, and naming one would mislead.
"""
import difflib
from typing import Iterable, Optional


def edit_distance(a: str, b: str) -> int:
    """Optimal-string-alignment distance: insertions, deletions, substitutions, swaps of adjacent characters."""
    prev2: list = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[len(b)]


def is_typo_of(name: str, candidate: str) -> bool:
    """Whether ``name`` is close enough to ``candidate`` (case-insensitive) to be a misspelling of it."""
    return edit_distance(name.lower(), candidate.lower()) <= max(2, len(candidate) // 4)


def closest(name: str, candidates: Iterable[str]) -> Optional[str]:
    """The candidate nearest to ``name`` (case-insensitive) that it could be a misspelling of, or None."""
    candidates = list(candidates)
    lowered = {c.lower(): c for c in candidates}
    matches = difflib.get_close_matches(name.lower(), list(lowered), n=5, cutoff=0.6)
    typos = [m for m in matches if is_typo_of(name, m)]
    return lowered[typos[0]] if typos else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``'; did you mean X?'`` when a close candidate exists, else an empty string."""
    best = closest(name, candidates)
    return f"; did you mean {best}?" if best else ""

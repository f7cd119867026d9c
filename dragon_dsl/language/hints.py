""" "Did you mean": the closest known word to a misspelt one, in time independent of how many words are known.

`difflib.get_close_matches` compares the word with every choice, so a script
with many definitions and many undefined uses took time in the product of the
two. Here the known words are indexed by their one-deletion variants (a word and
every string made by deleting one of its characters); a query looks up its own
variants up to two deletions, which finds every word within about three edits
(insertions, deletions, substitutions, transpositions). difflib's similarity then
ranks those few candidates with its usual cutoff, so hints read as before; a word
needing more edits gets no hint. Definitions are indexed only once a hint is asked
for, so a script without a slip pays nothing.

Fixed vocabularies (instruction names, parameters, scopes, thread axes) do not grow
with the script: `closest` keeps difflib over the whole vocabulary, remembering words.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from functools import lru_cache

#: Queries longer than this get no hint (their variants would cost more than they help).
MAX_WORD = 64
#: At most this many candidates are ranked per query (the first in sorted order).
MAX_CANDIDATES = 256


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


class NameIndex:
    """Known words for hints; words may be added between queries (a checker adds definitions)."""

    def __init__(self, words: Iterable[str] = ()):
        self._variants: dict[str, list[str]] = {}
        self._words: set[str] = set()
        self._pending: list[str] = []  # added, not yet indexed: a script without a slip never pays for the index
        self._cache: dict[str, tuple[int, str | None]] = {}  # word -> (index size when asked, hint)
        for w in words:
            self.add(w)

    def __len__(self) -> int:
        return len(self._words)

    def __contains__(self, word: str) -> bool:
        return word in self._words

    def add(self, word: str) -> None:
        if word in self._words or len(word) > MAX_WORD:
            return
        self._words.add(word)
        self._pending.append(word)

    def _index_pending(self) -> None:
        variants = self._variants
        for word in self._pending:
            for v in _deletions(word) | {word}:
                variants.setdefault(v, []).append(word)
        self._pending.clear()

    def closest(self, word: str) -> str | None:
        if not self._words or len(word) > MAX_WORD:
            return None
        if self._pending:
            self._index_pending()
        cached = self._cache.get(word)
        if cached is not None and cached[0] == len(self._words):
            return cached[1]
        keys = {word} | _deletions(word)
        for k in list(keys):
            keys |= _deletions(k)
        found: set[str] = set()
        for k in keys:
            found.update(self._variants.get(k, ()))
        hint = None
        if found:
            best = difflib.get_close_matches(word, sorted(found)[:MAX_CANDIDATES], n=1)
            hint = best[0] if best else None
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[word] = (len(self._words), hint)
        return hint


@lru_cache(maxsize=8192)
def _closest_fixed(word: str, words: tuple[str, ...]) -> str | None:
    best = difflib.get_close_matches(word, words, n=1)
    return best[0] if best else None


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The closest word of a small fixed vocabulary (instruction names, parameters, scopes...).

    difflib over the whole vocabulary: its size does not grow with the script, so
    this costs a bounded time per query (and repeated words are remembered).
    """
    if len(word) > MAX_WORD:
        return None
    return _closest_fixed(word, tuple(choices))

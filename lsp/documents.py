"""Open documents: their text, version and edits, with LSP's rules for lines and columns.

LSP separates lines by `\n`, `\r\n` or `\r` (not by the other Unicode line
breaks Python's `splitlines` knows) and counts columns in the negotiated
position encoding. The store keeps the text exactly as the client has it;
analysis reads it with `\r\n` and `\r` turned into `\n`, as the parser does.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

from dragon_lsp.convert import units_to_cp

_BREAK = re.compile(r"\r\n|\r|\n")

#: Documents larger than this are not analysed (the server stays responsive on any input).
MAX_CHARS = 4_000_000


def uri_to_path(uri: str) -> str | None:
    """file:// URIs -> a filesystem path; other schemes (untitled:, ...) -> None."""
    try:
        parsed = urlparse(uri)
    except ValueError:
        return None
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if re.match(r"^/[A-Za-z]:", path):  # file:///C:/x on Windows
        path = path[1:]
    return str(Path(path))


class Document:
    def __init__(self, uri: str, text: str, version: int, language_id: str = "dragon"):
        self.uri = uri
        self.text = text
        self.version = version
        self.language_id = language_id
        self.path = uri_to_path(uri)
        self._starts: list[int] | None = None

    def _line_starts(self) -> list[int]:
        if self._starts is None:
            self._starts = [0] + [m.end() for m in _BREAK.finditer(self.text)]
        return self._starts

    def offset(self, line: int, units: int, encoding: str) -> int:
        """An LSP position (0-based line, code units) -> an offset into the text (clamped)."""
        starts = self._line_starts()
        if line < 0:
            return 0
        if line >= len(starts):
            return len(self.text)
        start = starts[line]
        end = starts[line + 1] if line + 1 < len(starts) else len(self.text)
        body = self.text[start:end].rstrip("\r\n") if line + 1 < len(starts) else self.text[start:end]
        return start + units_to_cp(body, units, encoding)

    def apply(self, changes, version: int | None, encoding: str) -> None:
        """Apply `didChange` content changes in order (ranged or whole-text)."""
        for change in changes:
            rng = getattr(change, "range", None)
            if rng is None:
                self.text = change.text
            else:
                a = self.offset(rng.start.line, rng.start.character, encoding)
                b = self.offset(rng.end.line, rng.end.character, encoding)
                if b < a:
                    a, b = b, a
                old = self.text
                self.text = old[:a] + change.text + old[b:]
                self._starts = _moved_starts(self._starts, old, a, b, change.text)
                continue
            self._starts = None
        if version is not None:
            self.version = version


def _moved_starts(starts: list[int] | None, old: str, a: int, b: int, new: str) -> list[int] | None:
    """The line starts after old[a:b] became `new`, from those before (None: count them again)."""
    if starts is None or "\r" in new or "\r" in old[max(0, a - 1) : b + 1]:
        return None  # a `\r` next to the edit may join or split a `\r\n`
    shift = len(new) - (b - a)
    out = starts[: bisect.bisect_right(starts, a)]
    out += [a + m.end() for m in _BREAK.finditer(new)]
    out += [s + shift for s in starts[bisect.bisect_right(starts, b) :]]
    return out


def normalize(text: str) -> str:
    """The text the parser sees: `\r\n` and `\r` read as `\n`."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text

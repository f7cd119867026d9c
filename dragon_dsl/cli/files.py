"""Reading the command line's input files: UTF-8, folders expanded, clear errors.

Writing goes through `dragon_dsl.language.files` (the one atomic write)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


class FileProblem(Exception):
    """A file that cannot be read or written; the message names it."""


def read_source(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    if Path(path).is_dir():  # what `expand` keeps of a folder without scripts, or a folder given for a file
        if next(Path(path).rglob("*.dragon"), None) is None:
            raise FileProblem(f"{path}: a folder with no .dragon files")
        raise FileProblem(f"{path}: a folder, not a file")
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FileProblem(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FileProblem(f"{path}:{line}:{col}: not UTF-8 text ({exc.reason})") from None


def expand(paths: list[str]) -> list[str]:
    """Files as given; folders become the .dragon files under them (sorted). A folder without any
    stays in the list, so that reading it reports the problem (a command given nothing to do fails)."""
    out = []
    for p in paths:
        path = Path(p)
        if p != "-" and path.is_dir():
            found = sorted(str(x) for x in path.rglob("*.dragon"))
            out += found or [p]
        else:
            out.append(p)
    return out


_SPACE = re.compile(r"[ \t\n\r]*")


def json_position(text: str, path: list[int]) -> tuple[int, int]:
    """(line, column), 1-based, where the element at `path` (list indices from the top) starts in
    JSON `text`; where the path leaves the text's lists, the last element reached."""
    skip = json.JSONDecoder().raw_decode
    i = _SPACE.match(text, 0).end()
    for index in path:
        if not text.startswith("[", i):
            break
        j = _SPACE.match(text, i + 1).end()
        if text.startswith("]", j):
            break
        for _ in range(index):
            try:
                _, k = skip(text, j)
            except json.JSONDecodeError:
                break
            k = _SPACE.match(text, k).end()
            if not text.startswith(",", k):
                break
            j = _SPACE.match(text, k + 1).end()
        i = j
    line = text.count("\n", 0, i) + 1
    return line, i - (text.rfind("\n", 0, i) + 1) + 1

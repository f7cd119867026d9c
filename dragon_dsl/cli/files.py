"""Reading the command line's input files: UTF-8, folders expanded, clear errors.

Writing goes through `dragon_dsl.files` (the one atomic write)."""

from __future__ import annotations

import sys
from pathlib import Path


class FileProblem(Exception):
    """A file that cannot be read or written; the message names it."""


def read_source(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
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
    """Files as given; folders become the .dragon files under them (sorted)."""
    out = []
    for p in paths:
        path = Path(p)
        if p != "-" and path.is_dir():
            out += sorted(str(x) for x in path.rglob("*.dragon"))
        else:
            out.append(p)
    return out

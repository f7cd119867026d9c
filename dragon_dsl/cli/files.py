"""Reading and writing script files safely: UTF-8, atomic replacement, clear errors."""

from __future__ import annotations

import os
import sys
import tempfile
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


def write_atomic(path: str, text: str) -> None:
    """Replace a file's content without a window in which it is truncated or lost."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        try:
            os.chmod(tmp, target.stat().st_mode & 0o7777)
        except OSError:
            pass
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


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

"""Writing files so that a reader, a crash or a second writer never sees half of one; reading
JSON Lines with the position of a bad line (`json_lines`, `read_json_lines`).

This module owns the one atomic write of the tree. Every command and library
function that replaces a file goes through `write_text`, `write_json` or
`write_bytes`; `create_text` creates a file only when it does not exist yet.

How a write works, and why:
- the content goes to a temporary file in the target's folder (same file system,
  so the final rename is atomic), under a name no other writer can pick: the
  random characters and the writer's pid, created with O_EXCL. Several processes
  (shards of one run, two editors) may write the same path at once: the last
  rename wins, each temporary file is whole, none is shared;
- the file is flushed and fsync'ed before `os.replace`, and the folder after it,
  so a power cut leaves the old file or the whole new one;
- a new file gets mode 0666 less the umask, as `open(path, "w")` gives; a file
  that already exists keeps its mode (an in-place `dragon-fmt` changes content,
  not permissions);
- text ends with a newline (an empty text stays empty), as POSIX tools expect.

A temporary file left by a killed writer is named `.NAME.RANDOM.PID.tmp`;
`stray_temporaries` finds those whose writer is gone, so a resumable job can remove them.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Union

PathLike = Union[str, "os.PathLike[str]"]
TEMP_SUFFIX = ".tmp"


def cache_root() -> Path:
    """The user's cache folder for Little Dragon (results, TVM's tensor intrinsics):
    $DRAGON_CACHE_DIR, else ~/.cache/little-dragon. Nothing in it is data a user would lose:
    every file there can be rebuilt."""
    base = os.environ.get("DRAGON_CACHE_DIR")
    return Path(base) if base else Path.home() / ".cache" / "little-dragon"


def json_lines(lines, where: str) -> list:
    """The JSON values of LINES (a JSON Lines text's lines; blank ones skipped); a line that is not
    JSON is a ValueError "WHERE:LINE:COLUMN: not JSON: ..." (WHERE: the file's name)."""
    out = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}:{number}:{exc.colno}: not JSON: {exc.msg}") from None
    return out


def read_json_lines(path: PathLike) -> list:
    """`json_lines` of the file PATH, read compressed when its name ends in .gz or .xz (the committed
    tasks and training rows are)."""
    name = str(path)
    if name.endswith(".gz"):
        import gzip

        opener = gzip.open
    elif name.endswith(".xz"):
        import lzma

        opener = lzma.open
    else:
        opener = open
    with opener(path, "rt", encoding="utf-8") as f:
        return json_lines(f, name)


def write_text(path: PathLike, text: str) -> Path:
    """Replace `path` with `text` (UTF-8, a trailing newline added when missing) atomically."""
    return write_bytes(path, _with_newline(text).encode("utf-8"))


def write_json(path: PathLike, data: Any, *, indent: int | None = 1, sort_keys: bool = False, **dump_kw) -> Path:
    """Replace `path` with `data` as JSON (one trailing newline) atomically."""
    return write_text(path, json.dumps(data, indent=indent, sort_keys=sort_keys, **dump_kw))


def write_bytes(path: PathLike, data: bytes) -> Path:
    """Replace `path` with `data` atomically (see the module docstring)."""
    target = Path(path)
    try:
        mode = target.stat().st_mode & 0o7777
    except OSError:
        mode = None  # a new file: the umask decides, as for any file this user creates
    tmp = _write_temporary(target, data)
    try:
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _sync_folder(target.parent)
    return target


def create_text(path: PathLike, text: str) -> bool:
    """Create `path` with `text` unless it exists; True when this call created it.

    The file appears whole or not at all, and of several processes creating it at
    once exactly one wins (a hard link fails when the name is taken)."""
    target = Path(path)
    tmp = _write_temporary(target, _with_newline(text).encode("utf-8"))
    try:
        os.link(tmp, target)
    except FileExistsError:
        return False
    finally:
        _unlink_quietly(tmp)
    _sync_folder(target.parent)
    return True


def stray_temporaries(folder: PathLike) -> Iterator[Path]:
    """Temporary files in `folder` whose writing process is gone (a write cut short by a kill)."""
    for tmp in Path(folder).glob(f".*{TEMP_SUFFIX}"):
        pid = writer_pid(tmp)
        if pid != os.getpid() and not _alive(pid):
            yield tmp


def writer_pid(tmp: PathLike) -> int:
    """The pid in a temporary file's name (`.NAME.RANDOM.PID.tmp`), -1 when it has none."""
    try:
        return int(Path(tmp).name.rsplit(".", 2)[-2])
    except (ValueError, IndexError):
        return -1


# --- internals --------------------------------------------------------------------------------------
def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _write_temporary(target: Path, data: bytes) -> Path:
    folder = target.parent
    for _ in range(100):
        tmp = folder / f".{target.name}.{secrets.token_hex(4)}.{os.getpid()}{TEMP_SUFFIX}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            continue
        break
    else:  # 100 collisions of 32 random bits: something else is wrong
        raise FileExistsError(f"{folder}: cannot create a temporary file for {target.name}")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: some file systems refuse a folder's fsync)."""
    try:
        fd = os.open(folder if str(folder) else ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _alive(pid: int) -> bool:
    """Whether a process of this machine still writes that file. A file written by another
    machine's process on a shared folder is left alone only while a local pid of that number lives."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

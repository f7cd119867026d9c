"""TVM's tensor intrinsics (wmma, mma, ldmatrix, dot products), registered in milliseconds.

Importing `tvm.s_tir.tensor_intrin` registers every intrinsic TVM ships, each parsed from TVMScript:
35 s on a 2-core machine (CUDA's alone 25 s), about 30 s in each build worker of a 16-core GPU
host, where every worker paid it inside its first tensor-core replay (the engine's `replay` phase).
The first full import saves every intrinsic it registered as TVM's own JSON in the user's cache;
a process that replays a trace then registers only the intrinsics the trace names, from there.
A process that tunes needs the full import (MetaSchedule's TuneContext imports the package):
`register_tensor_intrinsics()` does it in about 5 s instead (`_frames_outside_modules`).

Invariants:
- an intrinsic registered from the cache is the one TVM's import registers (structurally equal:
  tests/tvm/test_intrinsics.py compares every one);
- the cache folder is keyed by the TVM and tvm-ffi versions; its index is written last and every
  file atomically, so a reader sees a whole cache or none; a missing, partial or unreadable cache
  means the full import, which writes it again; processes that miss the cache at once (the build
  workers of a new machine) take a lock: one imports, the others then read what it wrote;
- TVM's modules imported after a registration from the cache still import: they register the same
  intrinsics again, and `TensorIntrin.register` overrides exactly the names the cache registered.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

from dragon_dsl.language.files import cache_root, write_json, write_text
from dragon_dsl.language.table import INST
from dragon_dsl.language.table.trace_json import trace_row

__all__ = ["cache_folder", "register_tensor_intrinsics", "tensor_intrin_names"]

_PACKAGE = "tvm.s_tir.tensor_intrin"
_from_cache: set = set()  # names this process registered from the cache
_override_installed = False


def tensor_intrin_names(trace) -> set:
    """The intrinsics trace JSON tensorizes with (empty for a trace that does not tensorize, or
    one too malformed to read: the replay reports that)."""
    names = set()
    try:
        for inst in trace[0]:
            row = trace_row(inst)
            if row.entry is INST.tensorize:
                names.add(str(row.arg("tensor_intrin")))
    except (TypeError, IndexError, KeyError):
        return set()
    return names


def cache_folder() -> Path:
    import tvm
    import tvm_ffi

    return cache_root() / f"tensor-intrinsics-tvm{tvm.__version__}-ffi{tvm_ffi.__version__}"


def register_tensor_intrinsics(names: Iterable[str] | None = None) -> None:
    """Make NAMES (every intrinsic TVM ships when None) available to replays in this process:
    from the cache when it holds them all, else by TVM's own import (which fills the cache)."""
    from tvm.s_tir import TensorIntrin

    if _PACKAGE in sys.modules:
        return
    if names is None:
        _import_all()
        return
    missing = sorted(n for n in set(names) if TensorIntrin.get(n, allow_missing=True) is None)
    if not missing or _register_from_cache(missing):
        return
    with _filling():  # one process of a machine imports and fills the cache; the others wait, then read it
        if not _register_from_cache(missing):
            _import_all()


@contextmanager
def _filling():
    """An exclusive lock on the cache folder's lock file (no lock where the cache cannot be written)."""
    import fcntl

    try:
        folder = cache_folder()
        folder.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(str(folder.parent / f".{folder.name}.lock"), os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _register_from_cache(names: list) -> bool:
    """Register NAMES from the cache; False when the cache lacks one (nothing is registered then)."""
    import tvm
    from tvm.s_tir import TensorIntrin

    folder = cache_folder()
    try:
        index = set(json.loads((folder / "index.json").read_text(encoding="utf-8"))["names"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if not set(names) <= index:
        return False
    loaded = []
    try:
        for name in names:
            data = json.loads((folder / _file_name(name)).read_text(encoding="utf-8"))
            loaded.append((name, tvm.ir.load_json(data["desc"]), tvm.ir.load_json(data["impl"])))
    except Exception:
        return False
    _install_override()
    for name, desc, impl in loaded:
        TensorIntrin.register(name, desc, impl)
        _from_cache.add(name)
    return True


def _import_all() -> None:
    """TVM's own import of every intrinsic, saved to the cache on the way (when this process
    is the one that imports them: only then are the registrations seen)."""
    import tvm
    from tvm.s_tir import TensorIntrin

    _install_override()
    seen = {}
    register = TensorIntrin.register

    def recording(name, desc, impl, override=False):
        seen[str(name)] = (desc, impl)
        return register(name, desc, impl, override)

    TensorIntrin.register = staticmethod(recording)
    try:
        with _frames_outside_modules():
            import tvm.s_tir.tensor_intrin
    finally:
        TensorIntrin.register = staticmethod(register)
    if seen:
        try:
            _save(cache_folder(), seen, tvm)
        except OSError:
            pass  # a read-only home: every process imports, as before the cache


@contextmanager
def _frames_outside_modules():
    """inspect.getmodule answers None at once for a frame of code that has no module file (the import
    system's `<frozen importlib._bootstrap>`, TVMScript's `<ast>`), while the import runs.

    Why: TVM's `T.prim_func` takes `inspect.stack()` for every intrinsic it parses, and for each
    such frame `inspect.getmodule` walks all of `sys.modules` before it gives up: about 19,000
    walks over 2,000 or more modules for the package's 250 functions, nine tenths of its import
    time (45 s of 50 s on a 2-core machine; more in a process with more modules loaded). The
    answer is the same: such a file is no module's `__file__`, and a frame has no `__name__` to
    look up in `__main__` or builtins, which is where `getmodule` would look next."""
    import inspect

    getmodule = inspect.getmodule

    def frames_outside_modules(obj, _filename=None):
        if _filename and _filename.startswith("<") and inspect.isframe(obj) and _filename not in inspect.modulesbyfile:
            return None
        return getmodule(obj, _filename)

    inspect.getmodule = frames_outside_modules
    try:
        yield
    finally:
        inspect.getmodule = getmodule


def _save(folder: Path, seen: dict, tvm) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, (desc, impl) in seen.items():
        write_text(
            folder / _file_name(name),
            json.dumps({"name": name, "desc": tvm.ir.save_json(desc), "impl": tvm.ir.save_json(impl)}),
        )
    write_json(folder / "index.json", {"names": sorted(seen)})


def _file_name(name: str) -> str:
    """The cache file of intrinsic NAME: its name made safe for a file system, and a checksum of
    the original (two names that differ only in unsafe characters get two files)."""
    import zlib

    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    return f"{safe}-{zlib.crc32(name.encode('utf-8')):x}.json"


def _install_override() -> None:
    """TensorIntrin.register overrides the names registered from the cache (TVM's modules,
    imported later, register the same functions again; without this they would raise)."""
    global _override_installed
    if _override_installed:
        return
    from tvm.s_tir import TensorIntrin

    register = TensorIntrin.register

    def register_again(name, desc, impl, override=False):
        return register(name, desc, impl, override or str(name) in _from_cache)

    TensorIntrin.register = staticmethod(register_again)
    _override_installed = True

"""Workloads: a `.tvmscript` file holds the printed text of an IRModule with a `main` function."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Union


class WorkloadError(ValueError):
    pass


def load_workload(source: Union[str, Path, "object"]):
    """Return an IRModule from TVMScript text, a path to a `.tvmscript` file, or an IRModule.

    TVMScript is parsed by TVM's parser (a Python-syntax front end that does not
    execute the text).
    """
    import tvm

    if isinstance(source, tvm.IRModule):
        return source
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and source.endswith(".tvmscript")):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise WorkloadError(f"cannot read workload {path}: {exc.strerror}") from None
    else:
        text = str(source)
    return _parse_cached(text)


@lru_cache(maxsize=64)
def _parse_cached(text: str):
    """Parsing a workload costs tens of milliseconds; IRModules are immutable, so share them."""
    import tvm
    from tvm.script import parser as tvm_parser

    try:
        mod = tvm_parser.parse(text, extra_vars=_extra_vars())
    except Exception as exc:  # TVM's parser reports all errors through its own exception types
        raise WorkloadError(f"cannot parse workload: {_first_line(exc)}") from None
    if isinstance(mod, tvm.tirx.PrimFunc):
        mod = tvm.IRModule({"main": mod})
    if not isinstance(mod, tvm.IRModule) or mod.get_global_vars() == [] or "main" not in [g.name_hint for g in mod.get_global_vars()]:
        raise WorkloadError("a workload must be an IRModule with a function named 'main'")
    return mod


def _extra_vars():
    from tvm.script import ir as I  # noqa: N812
    from tvm.script import tirx as T  # noqa: N812

    return {"I": I, "T": T}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


def workload_text(mod) -> str:
    return mod.script()

"""Workloads: a `.tvmscript` file holds the printed text of an IRModule with a `main` function.

mod = load_workload("w.tvmscript")          # TVMScript text or file, parsed once (cached)
mod = make_workload("matmul(64,64,64)")      # MetaSchedule's te_workload catalogue, or a file
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path


class WorkloadError(ValueError):
    """A workload that cannot be read or parsed. `line` and `column` (1-based) point into its text
    when TVM's parser said where; `str()` is one line, `file:line:col: message`; `snippet()` gives
    the offending line and a caret under the column."""

    def __init__(self, message: str, *, path=None, line=None, column=None, source_line=None):
        self.reason, self.path, self.line, self.column, self.source_line = message, path, line, column, source_line
        where = f"{path}:" if path else ""
        if line:
            where += f"{line}:{column or 1}:"
        super().__init__(f"{where} {message}" if where else message)

    def located(self, path) -> WorkloadError:
        """The same error, naming the file its text came from."""
        return WorkloadError(self.reason, path=path, line=self.line, column=self.column, source_line=self.source_line)

    def snippet(self) -> str:
        if not self.line or self.source_line is None:
            return ""
        text = self.source_line[:200]  # as dragon-check shows a script's line
        return f"  {self.line:>4} | {text}\n       | {' ' * max(0, min((self.column or 1) - 1, len(text)))}^"


def load_workload(source: str | Path | object):
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
        return _parse_cached(str(source))
    try:
        return _parse_cached(text)
    except WorkloadError as exc:
        raise exc.located(path) from None


@lru_cache(maxsize=64)
def _parse_cached(text: str):
    """Parsing a workload costs tens of milliseconds; IRModules are immutable, so share them."""
    import tvm
    from tvm.script import parser as tvm_parser

    first = _first_code_line(text)
    if first is None:  # TVM's parser says "No result exists in IRBuilder yet"
        what = "it is empty" if not text.strip() else "it holds only comments"
        raise WorkloadError(f"{NOT_A_MODULE}: {what}")
    try:
        mod = tvm_parser.parse(text, extra_vars=_extra_vars())
    except SyntaxError as exc:  # Python's tokenizer refused it: not TVMScript (nor any Python) at all
        why = "invalid Python syntax" + ("" if exc.msg == "invalid syntax" else f": {exc.msg}")
        raise _located(text, f"{NOT_A_MODULE}: {why}", exc.lineno, exc.offset) from None
    except Exception as exc:  # TVM's parser reports all errors through its own exception types
        line, column, message = _tvm_parse_error(exc)
        if _NOT_A_MODULE_SIGNS.search(message):  # Python, but not a module: TVM's words name its AST nodes
            if not line or _first_code_line(text.split("\n", line - 1)[-1].split("\n", 1)[0]) is None:
                line, column = first, 1  # TVM names line 1 for the module as a whole, a comment there too
            found = "no @T.prim_func" if "prim_func" not in text else "statements outside of an @I.ir_module class"
            raise _located(text, f"{NOT_A_MODULE}: {found} (TVM's parser: {message})", line, column) from None
        raise _located(text, f"cannot parse workload: {message}", line, column) from None
    if isinstance(mod, tvm.tirx.PrimFunc):
        mod = tvm.IRModule({"main": mod})
    if (
        not isinstance(mod, tvm.IRModule)
        or mod.get_global_vars() == []
        or "main" not in [g.name_hint for g in mod.get_global_vars()]
    ):
        raise WorkloadError("a workload must be an IRModule with a function named 'main'")
    return mod


#: what a text that is no workload at all is called (an empty file, prose, a .dragon script, Python)
NOT_A_MODULE = "not a TVMScript module with a prim_func"
#: TVM's parser's words for Python it has no meaning for at the top of a module (a comparison, an
#: import, an attribute...) and for a text that built nothing
_NOT_A_MODULE_SIGNS = re.compile(r"Visitor of AST node is not implemented|No result exists in IRBuilder")


def _first_code_line(text: str) -> int | None:
    """The number (1-based) of the first line that is neither blank nor a comment, None when none is."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            return number
    return None


def _extra_vars():
    from tvm.script import ir as I
    from tvm.script import tirx as T

    return {"I": I, "T": T}


_TVM_POSITION = re.compile(r"^\s*-->\s*.*?:(\d+):(\d+)\s*$", re.M)


def _tvm_parse_error(exc: BaseException):
    """(line, column, message) of an error of TVM's script parser: its text is
    `error: MESSAGE` then ` --> <str>:LINE:COL` then the source line and carets."""
    text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    message = lines[0].strip() if lines else type(exc).__name__
    if message.startswith("error:"):
        message = message[len("error:") :].strip()
    m = _TVM_POSITION.search(text)
    return (int(m.group(1)), int(m.group(2)), message) if m else (None, None, message)


def _located(text: str, message: str, line, column) -> WorkloadError:
    source_line = None
    if line and 1 <= line <= text.count("\n") + 1:
        source_line = text.split("\n", line)[line - 1].rstrip("\r")
    return WorkloadError(message, line=line, column=column, source_line=source_line)


def workload_text(mod) -> str:
    return mod.script()


def module_of(func_or_tensors):
    """A workload IRModule (function `main`) from a PrimFunc, an IRModule or te tensors, printed and
    parsed once so that its names are stable (what `load_workload` of its text gives)."""
    import tvm
    from tvm import te

    if isinstance(func_or_tensors, (list, tuple)):
        func_or_tensors = te.create_prim_func(list(func_or_tensors))
    mod = func_or_tensors if isinstance(func_or_tensors, tvm.IRModule) else tvm.IRModule({"main": func_or_tensors})
    return load_workload(mod.script())


def structural_hash(mod) -> str:
    """TVM's structural hash of a module, as text (what MetaSchedule's databases key workloads by)."""
    import tvm_ffi

    return str(tvm_ffi.structural_hash(mod))


def estimate_flops(mod, *, strict: bool = False) -> float:
    """TVM's estimate of a module's floating-point operations; 0.0 where its estimator refuses one
    (with STRICT, TVM's error is raised instead)."""
    from tvm.s_tir.analysis import estimate_tir_flops

    try:
        return float(estimate_tir_flops(mod))
    except Exception:
        if strict:
            raise
        return 0.0


class WorkloadSpecError(WorkloadError):
    """A workload spec that names no te_workload and no readable file."""


_CALL = re.compile(r"^([A-Za-z_][A-Za-z_0-9]*)\(([0-9,\s]*)\)$")
_CONFIG = re.compile(r"^([A-Z0-9_]+):([0-9]+)$")


def make_workload(spec: str):
    """'C2D:0' (te_workload.CONFIGS), 'matmul(1024,1024,1024)' (a te_workload function with int
    arguments), or a path to TVMScript text (.py or .tvmscript). Returns an IRModule with `main`,
    printed and parsed once so that names are stable."""
    import tvm
    from tvm import te
    from tvm.s_tir.meta_schedule.testing import te_workload

    path = Path(spec)
    if path.suffix in (".py", ".tvmscript") or path.exists():
        try:
            return load_workload(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise WorkloadSpecError(f"{spec}: cannot read: {exc.strerror}") from None
        except WorkloadError as exc:
            raise exc.located(spec) from None
    m = _CONFIG.match(spec)
    if m:
        name, idx = m.group(1), int(m.group(2))
        if name not in te_workload.CONFIGS:
            raise WorkloadSpecError(
                f"unknown te_workload config {name!r}; known: {', '.join(sorted(te_workload.CONFIGS))}"
            )
        configs = te_workload.CONFIGS[name]
        if not 0 <= idx < len(configs[1]):
            raise WorkloadSpecError(f"{name} has configs 0..{len(configs[1]) - 1}")
        func = te_workload.create_te_workload(name, idx)
    else:
        m = _CALL.match(spec.replace(" ", ""))
        if not m:
            raise WorkloadSpecError(f"cannot read workload spec {spec!r}: use 'C2D:0', 'matmul(64,64,64)' or a file")
        fname, args = m.group(1), [int(a) for a in m.group(2).split(",") if a]
        fn = getattr(te_workload, fname, None)
        if fn is None or not callable(fn) or fname.startswith("_"):
            raise WorkloadSpecError(f"te_workload has no function {fname!r}")
        try:
            func = te.create_prim_func(fn(*args))
        except Exception as exc:  # te raises its own errors for bad shapes/arity
            raise WorkloadSpecError(f"{spec}: {str(exc).strip().splitlines()[-1]}") from None
    mod = tvm.IRModule({"main": func}) if not isinstance(func, tvm.IRModule) else func
    return load_workload(mod.script())


def param_bytes(mod) -> int:
    """Bytes of the parameter buffers of `main` (inputs and outputs)."""
    import math

    import numpy as np

    return sum(math.prod(int(d) for d in p.ty.shape) * np.dtype(str(p.ty.dtype)).itemsize for p in mod["main"].params)

"""Making workloads: from MetaSchedule's te_workload catalogue or a TVMScript file."""

from __future__ import annotations

import re
from pathlib import Path


class WorkloadSpecError(ValueError):
    pass


_CALL = re.compile(r"^([A-Za-z_][A-Za-z_0-9]*)\(([0-9,\s]*)\)$")
_CONFIG = re.compile(r"^([A-Z0-9_]+):([0-9]+)$")


def make_workload(spec: str):
    """'C2D:0' (te_workload.CONFIGS), 'matmul(1024,1024,1024)' (a te_workload function with int
    arguments), or a path to TVMScript text (.py or .tvmscript). Returns an IRModule with `main`,
    printed and parsed once so that names are stable."""
    import tvm
    from tvm import te
    from tvm.s_tir.meta_schedule.testing import te_workload

    from dragon_dsl.tvm.workload import WorkloadError, load_workload

    path = Path(spec)
    if path.suffix in (".py", ".tvmscript") or path.exists():
        try:
            return load_workload(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise WorkloadSpecError(f"{spec}: cannot read: {exc.strerror}") from None
        except WorkloadError as exc:
            raise WorkloadSpecError(f"{spec}: {exc}") from None
    m = _CONFIG.match(spec)
    if m:
        name, idx = m.group(1), int(m.group(2))
        if name not in te_workload.CONFIGS:
            raise WorkloadSpecError(f"unknown te_workload config {name!r}; known: {', '.join(sorted(te_workload.CONFIGS))}")
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

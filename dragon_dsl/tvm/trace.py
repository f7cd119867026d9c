"""TVM trace objects -> plain JSON, and replay of trace JSON on a fresh schedule."""

from __future__ import annotations


def plain(obj):
    """Convert `Trace.as_json()` output to plain Python, the way MetaSchedule's JSONDumps does:
    IntImm(bool) -> bool, IntImm -> int, FloatImm -> float, strings -> str, arrays -> list, maps -> dict."""
    import tvm
    from tvm import tirx

    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, tirx.IntImm):
        dtype = str(getattr(obj, "dtype", None) or getattr(obj, "ty", ""))
        return bool(obj.value) if dtype == "bool" else int(obj.value)
    if isinstance(obj, tirx.FloatImm):
        return float(obj.value)
    if isinstance(obj, (list, tuple)) or type(obj).__name__ == "Array":
        return [plain(x) for x in obj]
    if isinstance(obj, dict) or type(obj).__name__ == "Map":
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, tvm.runtime.String) if hasattr(tvm.runtime, "String") else False:  # pragma: no cover
        return str(obj)
    raise TypeError(f"cannot convert {type(obj).__name__} to plain JSON")


def trace_json(sch) -> list:
    """The plain-JSON trace of a schedule, postprocessing included."""
    return plain(sch.trace.as_json(remove_postproc=False))


def apply(trace, mod, *, seed: int = 1):
    """Apply trace JSON to a fresh schedule of `mod`; returns the schedule (raises TVM's errors)."""
    from tvm import s_tir

    sch = s_tir.Schedule(mod, seed=seed)
    s_tir.Trace.apply_json_to_schedule(trace, sch)
    return sch

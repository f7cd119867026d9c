"""Build sources -> scheduled modules (`schedule`): a trace (checked by the Dragon decoder, then
replayed on a fresh schedule of the workload, exactly as TVM does), a scheduled IRModule
(MetaSchedule's builder inputs), dlight's default GPU rules, or the workload as it is."""

from __future__ import annotations

from dragon_dsl.tvm.compile.failures import ReplayError
from dragon_dsl.tvm.errors import tvm_message
from dragon_dsl.tvm.trace import apply


def schedule(mod, source: dict, target):
    """The scheduled IRModule for a build source; raises ReplayError."""
    import tvm

    if "trace" in source:
        trace = source["trace"]
        check_trace(trace)
        try:  # apply registers the tensor intrinsics the trace names
            return apply(trace, mod).mod
        except Exception as exc:  # TVM reports replay failures through its own exception types
            raise ReplayError(tvm_message(exc)) from None
    if "module" in source:
        from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

        # what MetaSchedule's default_build does before building
        return RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(tvm.ir.load_json(source["module"]))
    if source.get("baseline") == "dlight":
        from tvm.s_tir import dlight as dl

        from dragon_dsl.tvm.dlight import gpu_rules

        # dlight's module pass assigns the scheduled functions into the module it is given:
        # hand it a copy, never the worker's cached workload
        copy = tvm.IRModule({gv.name_hint: func for gv, func in mod.functions_items()}, attrs=mod.attrs)
        with target:
            return dl.ApplyDefaultSchedule(*gpu_rules())(copy)
    if source.get("baseline") == "unscheduled":
        return mod
    raise ValueError(f"unknown build source {sorted(source)}")


def check_trace(trace) -> None:
    """Reject what TVM would mishandle (out-of-range decisions etc.) before replaying it."""
    from dragon_dsl.language.codec.decode import decode

    try:
        script, diags = decode(trace)
    except Exception as exc:  # the decoder promises diagnostics, but a bad trace must never kill a worker
        raise ReplayError(f"trace rejected: {type(exc).__name__}: {exc}") from None
    if script is None:
        errors = [d.render("<trace>") for d in diags]
        raise ReplayError("trace rejected: " + " | ".join(errors[:3]))

"""The GPU check of a scheduled module (`check_gpu`): the thread loops' problems, then TVM's default
TIR pipeline and its VerifyGPUCode limits (shared memory, threads, vthreads, vector bytes), and a
kernel that exists; the target TVM's build binds first (`bound_target`)."""

from __future__ import annotations

from dragon_dsl.tvm.compile.bindings import thread_binding_problems
from dragon_dsl.tvm.compile.failures import BuildError
from dragon_dsl.tvm.errors import tvm_message


def check_gpu(mod, target):
    """Raise BuildError when the module runs (partly) on the host or breaks the target's limits;
    returns the module lowered by TVM's default TIR pipeline (what the limits were checked on)."""
    import tvm
    import tvm_ffi

    problems = thread_binding_problems(mod)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise BuildError(problems[0][1] + more)

    pipeline, _, _ = tvm.tirx.get_default_tir_pipeline(target)
    lowered = pipeline(tvm.tirx.transform.BindTarget(bound_target(target))(mod))
    constraints = {
        "max_shared_memory_per_block": int(target.attrs["max_shared_memory_per_block"]),
        "max_threads_per_block": int(target.attrs["max_threads_per_block"]),
        "max_vthread": 8,
        "max_vector_bytes": 16,
    }
    verify = tvm_ffi.get_global_func("s_tir.transform.VerifyGPUCode")(constraints)
    try:
        verify(lowered)
    except Exception as exc:  # TVM raises its own error type with the violated limits
        raise BuildError(tvm_message(exc)) from None
    kinds = {str(f.attrs["target"].kind.name) for f in lowered.functions.values() if f.attrs and "target" in f.attrs}
    if not kinds & {str(target.kind.name)}:
        raise BuildError(
            "no GPU kernel was generated: no loop is bound to blockIdx/threadIdx, "
            "so TVM compiled the whole function for the host"
        )
    return lowered


def bound_target(target):
    """The target `tvm.tirx.build` binds to a module before its TIR pipeline: TARGET with its own
    host, else llvm (c where TVM has no llvm); a CPU target is its own host."""
    import tvm
    from tvm.runtime import enabled
    from tvm_ffi import DLDeviceType

    if target.host is not None:
        return target.with_host(target.host)
    if target.get_target_device_type() == DLDeviceType.kDLCPU:
        return target.with_host(target)
    return target.with_host(tvm.target.Target("llvm" if enabled("llvm") else "c"))

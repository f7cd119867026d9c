"""The compile check's entry points: `checked_schedule` (schedule, then the checks of every target
and, on a GPU, `check_gpu`), `compile_scheduled`, `compile_checked` and `compile_problem`; the
checks' version the results cache keys by (CHECKS_VERSION)."""

from __future__ import annotations

import time
from typing import Any

from dragon_dsl.tvm.compile.failures import BuildError, ReplayError
from dragon_dsl.tvm.compile.gpu_limits import bound_target, check_gpu
from dragon_dsl.tvm.compile.mixed import mixed_loop_message, mixed_loops
from dragon_dsl.tvm.compile.repeated import repeated_update_message, repeated_updates
from dragon_dsl.tvm.compile.source import schedule
from dragon_dsl.tvm.compile.unreached import unreached_iterations, unreached_message
from dragon_dsl.tvm.errors import tvm_message
from dragon_dsl.tvm.target import GPU_KINDS

#: the version of the checks below (raised whenever one is added or tightened): a build or a
#: measurement the engine's results cache keeps answers a later request only when it passed the
#: checks of this version, so a schedule a new check rejects is built (and rejected) again rather
#: than answered from an earlier success. 2: RACING_REDUCTION. 3: `unreached_iterations`.
#: 4: `repeated_updates`. 5: `unreached_iterations` of blocks with no reduction left.
CHECKS_VERSION = 5


def compile_scheduled(scheduled, target, lowered=None):
    """`tvm.compile(scheduled, target)`. With LOWERED (what `check_gpu` made of SCHEDULED: the
    default TIR pipeline on the module bound as `tvm.tirx.build` binds it) only the rest of
    `tvm.tirx.build` runs (host/device split, finalizing passes, codegen), so a GPU candidate is
    lowered once, not twice; the generated source is the same (tests/tvm/test_compile_lowered.py)."""
    import tvm

    if lowered is None:
        return tvm.compile(scheduled, target)
    from tvm.driver.build_module import Executable
    from tvm.tirx.build import split_host_device_mods, tir_to_runtime

    _, finalize_host, finalize_device = tvm.tirx.get_default_tir_pipeline(target)
    host_mod, device_mods = split_host_device_mods(lowered)
    host_mod = finalize_host()(host_mod)
    device_mods = {t: finalize_device()(m) for t, m in device_mods.items()}
    return Executable(tir_to_runtime(host_mod, device_mods, bound_target(target).host))


def checked_schedule(mod, source: dict, target, phases=None):
    """`schedule`, then for a GPU `check_gpu`: what every build compiles (alone or in a group).
    PHASES (a dict), when given, gets the seconds of "replay" and "checks" added, and "lowered":
    the module `check_gpu` lowered (GPU targets only)."""
    t0 = time.perf_counter()
    try:
        scheduled = schedule(mod, source, target)
    finally:
        add_seconds(phases, "replay", time.perf_counter() - t0)
    return check_scheduled(scheduled, target, phases)


def check_scheduled(scheduled, target, phases=None):
    """The checks of `checked_schedule` on a module already scheduled; returns it. PHASES as there."""
    racing = [m for m in mixed_loops(scheduled) if m[2]]
    if racing:  # any target: parallel threads add into the same outputs at once
        raise BuildError(mixed_loop_message(racing) + "; its threads race on the block's outputs")
    unreached = unreached_message(unreached_iterations(scheduled))
    if unreached:  # any target: elements left unwritten, then read
        raise BuildError(unreached)
    repeated = repeated_update_message(repeated_updates(scheduled))
    if repeated:  # any target: values added more than once
        raise BuildError(repeated)
    if str(target.kind.name) in GPU_KINDS:
        t1 = time.perf_counter()
        try:
            lowered = check_gpu(scheduled, target)  # before compiling: TVM's own words for a broken limit
        finally:
            add_seconds(phases, "checks", time.perf_counter() - t1)
        if phases is not None:
            phases["lowered"] = lowered
    return scheduled


def add_seconds(phases, name: str, seconds: float) -> None:
    """Add SECONDS to phase NAME of PHASES (a dict of phase timings; None: nothing is timed)."""
    if phases is not None:
        phases[name] = phases.get(name, 0.0) + seconds


def compile_checked(mod, source: dict, target):
    """The executable of one build source: `checked_schedule`, then `tvm.compile` (which, on a
    machine without a GPU, stops at the CUDA source). Raises ReplayError, BuildError, or TVM's own
    error for a lowering or codegen failure."""
    phases: dict = {}
    scheduled = checked_schedule(mod, source, target, phases)
    return compile_scheduled(scheduled, target, phases.get("lowered"))


def compile_problem(trace: list, workload, target: Any) -> str | None:
    """Why TVM's compiler rejects trace JSON on WORKLOAD (anything `load_workload` takes) for TARGET
    (a tag, a target dict or a Target) before anything runs, or None: the replayed schedule is
    checked (for a GPU: host stages, thread extents, the target's limits) and compiled (to CUDA
    source for a GPU; no GPU, no nvcc). The engine's build does the same and then compiles the source."""
    from dragon_dsl.tvm.target import tvm_target
    from dragon_dsl.tvm.workload import load_workload

    try:
        compile_checked(load_workload(workload), {"trace": trace}, tvm_target(target))
    except (ReplayError, BuildError) as exc:
        return str(exc)
    except Exception as exc:
        return tvm_message(exc)
    return None

"""The compile check: what a build compiles, and what TVM 0.27 compiles but cannot run on a GPU.

`schedule` turns a build source into a scheduled IRModule: a trace (checked by the Dragon decoder,
then replayed on a fresh schedule of the workload, exactly as TVM does), a scheduled IRModule
(MetaSchedule's builder inputs), dlight's default GPU rules, or the workload as it is.
`checked_schedule` adds the checks of every target (mixed loops whose threads race, unwritten
slices, repeated updates) and, for GPU targets, the checks TVM 0.27's compile does not make
(`check_gpu`: blocks left on the host, thread loops that cannot run as written, TVM's own
VerifyGPUCode limits). The measurement engine's builder and the model's compile check
(`compile_problem`) both go through `checked_schedule`, so they reject the same scripts.

One module a check, this package re-exporting their public names:

| module | owns |
|---|---|
| `source.py`, `failures.py` | `schedule` (a build source -> scheduled module); `ReplayError`, `BuildError` |
| `build.py` | the entry points: `checked_schedule`, `check_scheduled`, `compile_scheduled`, `compile_checked`, `compile_problem`; CHECKS_VERSION |
| `bindings.py` | the walk over thread-bound loops: blocks on the host (`host_blocks`), thread loops past their outer one, `thread_binding_problems` |
| `thread_extents.py`, `racing.py` | one thread axis bound with two extents; reductions a kernel's threads race on |
| `gpu_limits.py` | `check_gpu`: the thread loops' problems, then TVM's VerifyGPUCode limits |
| `launch.py` | slow but correct: kernels launched from host loops, idle or starved kernels (`launch_problem`) |
| `mixed.py`, `bounds.py` | loops mixing spatial and reduction iterators; accesses outside a buffer, iterators outside their domain |
| `unreached.py`, `repeated.py` | unwritten slices; reductions re-run, updates repeated per initialisation |
| `realizes.py` | what the checks ask of a block realize (its predicate, its reduction bindings) |
| `scripts.py` | traces as kept scripts: `exact_script` (the codec round trip), `checked_scripts` (and the compile check) |
"""

from __future__ import annotations

from dragon_dsl.tvm.compile.bindings import (
    HOST_BLOCK,
    LAUNCH_LOOP,
    LOOP_PAST_OUTER,
    host_blocks,
    thread_binding_problems,
)
from dragon_dsl.tvm.compile.bounds import out_of_bounds, out_of_bounds_message, out_of_domain_bindings
from dragon_dsl.tvm.compile.build import (
    CHECKS_VERSION,
    add_seconds,
    check_scheduled,
    checked_schedule,
    compile_checked,
    compile_problem,
    compile_scheduled,
)
from dragon_dsl.tvm.compile.failures import BuildError, ReplayError
from dragon_dsl.tvm.compile.gpu_limits import check_gpu
from dragon_dsl.tvm.compile.launch import (
    IDLE_SERIAL,
    IDLE_THREADS,
    STARVED_SERIAL,
    idle_kernels,
    idle_message,
    kernel_blocks,
    kernel_shapes,
    launch_loops,
    launch_message,
    launch_problem,
    slow_launch_message,
    starved_kernels,
)
from dragon_dsl.tvm.compile.mixed import mixed_loop_message, mixed_loops
from dragon_dsl.tvm.compile.racing import RACING_REDUCTION, SHARED_SCOPES
from dragon_dsl.tvm.compile.repeated import (
    REPEATED_WORK_FACTOR,
    block_instances,
    repeated_reductions,
    repeated_update_message,
    repeated_updates,
    repeated_work_message,
)
from dragon_dsl.tvm.compile.source import schedule
from dragon_dsl.tvm.compile.thread_extents import EXTENT_MISMATCH
from dragon_dsl.tvm.compile.unreached import UNREACHED_VALUES, unreached_iterations, unreached_message

__all__ = [
    "BuildError",
    "CHECKS_VERSION",
    "EXTENT_MISMATCH",
    "HOST_BLOCK",
    "IDLE_SERIAL",
    "IDLE_THREADS",
    "LAUNCH_LOOP",
    "LOOP_PAST_OUTER",
    "RACING_REDUCTION",
    "REPEATED_WORK_FACTOR",
    "ReplayError",
    "SHARED_SCOPES",
    "STARVED_SERIAL",
    "UNREACHED_VALUES",
    "add_seconds",
    "block_instances",
    "check_gpu",
    "check_scheduled",
    "checked_schedule",
    "compile_checked",
    "compile_problem",
    "compile_scheduled",
    "host_blocks",
    "idle_kernels",
    "idle_message",
    "kernel_blocks",
    "kernel_shapes",
    "launch_loops",
    "launch_message",
    "launch_problem",
    "mixed_loop_message",
    "mixed_loops",
    "out_of_bounds",
    "out_of_bounds_message",
    "out_of_domain_bindings",
    "repeated_reductions",
    "repeated_update_message",
    "repeated_updates",
    "repeated_work_message",
    "schedule",
    "slow_launch_message",
    "starved_kernels",
    "thread_binding_problems",
    "unreached_iterations",
    "unreached_message",
]

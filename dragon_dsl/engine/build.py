"""Building one candidate, in a build worker: schedule, compile, check, export.

The schedule comes from a trace (checked by the Dragon decoder, then replayed on a
fresh schedule of the workload, exactly as TVM does), from a scheduled IRModule
(MetaSchedule's builder inputs), from dlight's default GPU rules, or is the
workload as it is. `tvm.compile` builds it. For GPU targets two checks follow that
TVM 0.27's compile does not make:
  * the lowered module must satisfy the target's limits, through TVM's own
    `s_tir.transform.VerifyGPUCode` (threads per block, shared memory, vthreads,
    vector bytes: the constraints MetaSchedule's VerifyGPUCode postprocessor uses);
  * the CUDA source must compile with nvcc (nvcc.py); the cubin is kept beside
    the exported library so the GPU worker loads it instead of compiling again.
The result is a shared library (`export_library`), loaded later by a device worker.

Where a GPU is present, TVM 0.27's `tvm.compile` compiles the CUDA source itself
(through `tvm_callback_cuda_compile`, NVRTC by default) and the library carries the
binary; the builder sees that call (`install_compile_probe`) and skips its own nvcc.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from dragon_dsl.engine.nvcc import NvccError, compile_cubin


class ReplayError(Exception):
    pass


class BuildError(Exception):
    pass


def tvm_message(exc: BaseException, limit: int = 600) -> str:
    """TVM's message for an exception, without the printed IR or a traceback."""
    text = str(exc).strip()
    primitive = None
    if "An error occurred in the schedule primitive" in text:
        primitive = text.splitlines()[0].split("primitive", 1)[1].strip(" .'")
    if "Error message:" in text:
        text = text.rsplit("Error message:", 1)[1].strip()
    text = text.replace("\x00", "").strip()  # NVRTC's log arrives NUL-padded
    if text.startswith("GPU constraint"):
        # "GPU constraint(s) violated:\n    Used threads per block (2048) is greater than ...\n  In function ..."
        message = " ".join(ln.strip() for ln in text.split("In function", 1)[0].splitlines() if ln.strip())
    else:
        lines = [ln.strip() for ln in text.splitlines()
                 if ln.strip() and not ln.startswith(("  File", "Traceback", "During handling"))]
        message = lines[-1] if lines else type(exc).__name__
    if primitive:
        message = f"{primitive}: {message}"
    return message[:limit]


def needs_tensor_intrin(trace) -> bool:
    try:
        return any(inst[0] == "Tensorize" for inst in trace[0])
    except (TypeError, IndexError, KeyError):
        return False


def schedule(mod, source: dict, target):
    """The scheduled IRModule for a build source; raises ReplayError."""
    import tvm

    if "trace" in source:
        trace = source["trace"]
        _check_trace(trace)
        if needs_tensor_intrin(trace):
            import tvm.s_tir.tensor_intrin  # noqa: F401  (registers the intrinsics the trace names)
        from dragon_dsl.tvm import trace as tr

        try:
            return tr.apply(trace, mod).mod
        except Exception as exc:  # TVM reports replay failures through its own exception types
            raise ReplayError(tvm_message(exc)) from None
    if "module" in source:
        from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

        # what MetaSchedule's default_build does before building
        return RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(tvm.ir.load_json(source["module"]))
    if source.get("baseline") == "dlight":
        from tvm.s_tir import dlight as dl

        # dlight's module pass assigns the scheduled functions into the module it is given:
        # hand it a copy, never the worker's cached workload
        copy = tvm.IRModule({gv.name_hint: func for gv, func in mod.functions_items()}, attrs=mod.attrs)
        with target:
            return dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                           dl.gpu.GeneralReduction(), dl.gpu.Fallback())(copy)
    if source.get("baseline") == "unscheduled":
        return mod
    raise ValueError(f"unknown build source {sorted(source)}")


def _check_trace(trace) -> None:
    """Reject what TVM would mishandle (out-of-range decisions etc.) before replaying it."""
    from dragon_dsl.codec.decode import decode

    try:
        script, diags = decode(trace)
    except Exception as exc:  # the decoder promises diagnostics, but a bad trace must never kill a worker
        raise ReplayError(f"trace rejected: {type(exc).__name__}: {exc}") from None
    if script is None:
        errors = [d.render("<trace>") for d in diags]
        raise ReplayError("trace rejected: " + " | ".join(errors[:3]))


#: kinds of `thread_binding_problems`
HOST_BLOCK = "host_block"
LOOP_PAST_OUTER = "thread_loop_past_outer"
EXTENT_MISMATCH = "thread_extent_mismatch"


def thread_binding_problems(mod) -> list:
    """What TVM 0.27 compiles without complaint but cannot run correctly on a GPU, as (kind, message):
      * HOST_BLOCK: a block (other than the root) under no loop bound to blockIdx/threadIdx/vthread:
        SplitHostDevice leaves it in the host function, which then reads the GPU's buffers from the
        CPU (a segfault, measured on the H200; neither VerifyMemory nor VerifyGPUCode objects);
      * LOOP_PAST_OUTER: a thread axis bound by two nested loops, the inner one longer: both loop
        variables become the same thread index (MetaSchedule's cooperative fetch relies on it), so
        the inner loop's iterations past the outer extent never run (outputs unwritten or wrong);
      * EXTENT_MISMATCH: one kernel (a nest under its outermost bound loop) binds a thread axis
        with two extents (> 1): a kernel has one block shape and TVM launches it
        with one of them (`__launch_bounds__(6)` for an rms_norm whose stages bound threadIdx.x to
        6 and 16), so the other loop runs with the wrong number of threads. Nested loops of one axis
        count too when the inner is shorter (a model's conv2d: threadIdx.x 4 inside threadIdx.x 32,
        outputs unwritten; MetaSchedule's cooperative fetch always repeats the extent); an inner
        one that is longer is LOOP_PAST_OUTER's. Seen in 7 of 9 model answers that compiled but
        failed on the H200; in none of the 784 verified corpus scripts.
    Only functions with at least one bound loop are looked at (none bound: `check_gpu`'s own message)."""
    return [(kind, message) for kind, message, _, any_bound in _binding_findings(mod) if any_bound]


def host_blocks(mod) -> list:
    """The names of the blocks that would run on the host (HOST_BLOCK: the outermost block of each
    nest under no bound loop), also in a function where no loop is bound at all."""
    return [block for kind, _, block, _ in _binding_findings(mod) if kind == HOST_BLOCK]


def _binding_findings(mod) -> list:
    """(kind, message, block name or None, whether the function binds any loop) per finding."""
    import tvm
    from tvm.s_tir import SBlockRealize

    problems = []
    for _, func in mod.functions_items():
        if not isinstance(func, tvm.tirx.PrimFunc):
            continue
        found, any_bound = [], False

        def visit(stmt, axes: dict, under_binding: bool, kernel: dict = None) -> None:
            """`axes`: thread tag -> extent of the bound loops around `stmt` (extent-1 loops left out:
            they are simplified away before the threads are bound, and constrain nothing);
            `kernel`: thread tag -> {extent: first loop's name} over the kernel `stmt` is in."""
            nonlocal any_bound
            if isinstance(stmt, tvm.tirx.For):
                if stmt.kind == tvm.tirx.ForKind.THREAD_BINDING and stmt.thread_binding is not None:
                    any_bound = True
                    tag = str(stmt.thread_binding.thread_tag)
                    extent = int(stmt.extent) if isinstance(stmt.extent, tvm.tirx.IntImm) else None
                    if not under_binding:   # the outermost bound loop of a nest: a kernel of its own
                        kernel = {}
                        visit(stmt, axes, True, kernel)
                        found.extend((kind, None, message) for kind, message in _extent_mismatches(kernel))
                        return
                    outer = axes.get(tag)
                    threads = extent is not None and not tag.startswith("vthread")
                    if threads and outer is not None and extent > outer:
                        found.append((LOOP_PAST_OUTER, None, f"loop {stmt.loop_var.name} binds {tag} ({extent}) inside a loop "
                                      f"bound to {tag} ({outer}): both take the same thread index, so its iterations "
                                      f"from {outer} on never run"))
                    elif threads and extent > 1:
                        kernel.setdefault(tag, {}).setdefault(extent, stmt.loop_var.name)
                    if extent != 1:
                        axes = {**axes, tag: extent}
                visit(stmt.body, axes, under_binding, kernel)
            elif isinstance(stmt, SBlockRealize):
                block = stmt.block
                if not under_binding and block.name_hint != "root" and (block.iter_vars or block.writes):
                    found.append((HOST_BLOCK, block.name_hint, f"block {block.name_hint!r} is under no loop bound to "
                                  "blockIdx/threadIdx: TVM would run it on the host, which cannot read the GPU's buffers"))
                    return  # its inner blocks run on the host with it: one message for the nest
                if block.init is not None:
                    visit(block.init, axes, under_binding, kernel)
                visit(block.body, axes, under_binding, kernel)
            elif isinstance(stmt, tvm.tirx.SeqStmt):
                for inner in stmt.seq:
                    visit(inner, axes, under_binding, kernel)
            elif isinstance(stmt, tvm.tirx.IfThenElse):
                visit(stmt.then_case, axes, under_binding, kernel)
                if stmt.else_case is not None:
                    visit(stmt.else_case, axes, under_binding, kernel)
            elif isinstance(getattr(stmt, "body", None), tvm.tirx.Stmt):
                visit(stmt.body, axes, under_binding, kernel)

        visit(func.body, {}, False)
        problems += [(kind, message, block, any_bound) for kind, block, message in found]
    return problems


def _extent_mismatches(kernel: dict) -> list:
    """EXTENT_MISMATCH problems of one kernel (thread tag -> {extent: first loop bound with it})."""
    out = []
    for tag, loops in kernel.items():
        if len(loops) > 1:
            (e1, n1), (e2, n2) = list(loops.items())[:2]
            out.append((EXTENT_MISMATCH, f"{tag} is bound with extent {e1} (loop {n1}) and {e2} (loop {n2}) in one "
                                         f"kernel: a kernel has one block shape, which TVM takes from one of them, so "
                                         f"the other loop runs with the wrong number of threads"))
    return out


def check_gpu(mod, target):
    """Raise BuildError when the module runs (partly) on the host or breaks the target's limits;
    returns the module lowered by TVM's default TIR pipeline (what the limits were checked on)."""
    import tvm
    import tvm_ffi

    problems = thread_binding_problems(mod)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise BuildError(problems[0][1] + more)

    host = target.with_host(tvm.target.Target("llvm"))
    pipeline, _, _ = tvm.tirx.get_default_tir_pipeline(target)
    with tvm.transform.PassContext():
        lowered = pipeline(tvm.tirx.transform.BindTarget(host)(mod))
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
        raise BuildError("no GPU kernel was generated: no loop is bound to blockIdx/threadIdx, "
                         "so TVM compiled the whole function for the host")
    return lowered


_compiled_by_tvm: list = []


def install_compile_probe() -> None:
    """Note every CUDA compilation TVM itself makes (it does so at build time on GPU machines)."""
    import tvm_ffi

    original = tvm_ffi.get_global_func("tvm_callback_cuda_compile", allow_missing=True)
    if original is None:
        return

    def probe(code, *rest):
        t0 = time.perf_counter()
        binary = original(code, *rest)
        _compiled_by_tvm.append(time.perf_counter() - t0)
        return binary

    tvm_ffi.register_global_func("tvm_callback_cuda_compile", probe, override=True)


def compile_checked(mod, source: dict, target):
    """The executable of one build source: `schedule`, then for a GPU `check_gpu`, then `tvm.compile`
    (which, on a machine without a GPU, stops at the CUDA source). Raises ReplayError, BuildError,
    or TVM's own error for a lowering or codegen failure. The builder and the model's compile check
    (`dragon_model.api.compile_problem`) both call this, so they reject the same scripts."""
    return _compile(checked_schedule(mod, source, target), target)


def checked_schedule(mod, source: dict, target, phases=None):
    """`schedule`, then for a GPU `check_gpu`: what every build compiles (alone or in a group).
    PHASES (a dict), when given, gets the seconds of "replay" and "checks" added, and "lowered":
    the module `check_gpu` lowered (GPU targets only)."""
    from dragon_dsl.engine.targets import GPU_KINDS

    t0 = time.perf_counter()
    try:
        scheduled = schedule(mod, source, target)
    finally:
        _add(phases, "replay", time.perf_counter() - t0)
    if str(target.kind.name) in GPU_KINDS:
        t1 = time.perf_counter()
        try:
            lowered = check_gpu(scheduled, target)  # before compiling: TVM's own words for a broken limit
        finally:
            _add(phases, "checks", time.perf_counter() - t1)
        if phases is not None:
            phases["lowered"] = lowered
    return scheduled


def _add(phases, name: str, seconds: float) -> None:
    if phases is not None:
        phases[name] = phases.get(name, 0.0) + seconds


def _timings(phases: dict) -> dict:
    """The phases of a reply: seconds only (the lowered module stays in the worker)."""
    return {k: v for k, v in phases.items() if isinstance(v, float)}


def source_key(scheduled, target, phases: dict, tag: str) -> str:
    """The identity of what a candidate compiles to: TVM's structural hash of the module lowered
    by the default TIR pipeline (what codegen turns into CUDA or LLVM source), prefixed by TAG
    (the measurement's configuration). Two traces with one key give one source: one is built and
    measured, the other gets its result (`Engine(dedupe_sources=True)`). A GPU build reuses the
    module `check_gpu` lowered; a CPU build lowers here (its cost counts as "checks")."""
    import tvm
    import tvm_ffi

    lowered = phases.pop("lowered", None)
    if lowered is None:
        t0 = time.perf_counter()
        host = target.host if target.host is not None else tvm.target.Target("llvm")
        pipeline, _, _ = tvm.tirx.get_default_tir_pipeline(target)
        with tvm.transform.PassContext():
            lowered = pipeline(tvm.tirx.transform.BindTarget(target.with_host(host))(scheduled))
        _add(phases, "checks", time.perf_counter() - t0)
    return f"{tag}-{tvm_ffi.structural_hash(lowered) & 0xFFFFFFFFFFFFFFFF:016x}"


def claim(claim_dir: str, key: str) -> bool:
    """True for the first build of KEY among every build worker of an engine (an exclusive create
    in the engine's claim folder), False for the ones after."""
    import os

    try:
        os.close(os.open(os.path.join(claim_dir, key), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    return True


def _export(executable, target, out_dir: Path, phases=None) -> Path:
    """Write the library (and, where TVM did not compile the CUDA source, its cubin) to OUT_DIR.
    PHASES gets the seconds of "compile" (nvcc, and the system compiler linking the library)."""
    t0 = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    artifact = out_dir / "mod.so"
    try:
        if str(target.kind.name) == "cuda" and not _compiled_by_tvm:
            device_mods = [m for m in executable.mod.imports if m.kind == "cuda"]
            source_text = device_mods[0].inspect_source()
            cubin = compile_cubin(source_text, target)
            (out_dir / "mod.cubin").write_bytes(cubin)
            (out_dir / "mod.cuhash").write_text(hashlib.sha256(source_text.encode()).hexdigest())
        executable.export_library(str(artifact))
    finally:
        _add(phases, "compile", time.perf_counter() - t0)
    return artifact


def _compile(scheduled, target, phases=None):
    """`tvm.compile`, its seconds split into "codegen" and "compile" (the CUDA compiler TVM calls)."""
    import tvm

    _compiled_by_tvm.clear()
    t0 = time.perf_counter()
    try:
        return tvm.compile(scheduled, target)
    finally:
        compiler = sum(_compiled_by_tvm)
        _add(phases, "codegen", time.perf_counter() - t0 - compiler)
        _add(phases, "compile", compiler)


def build(mod, source: dict, target, out_dir: Path, claim_job=None) -> dict:
    """Build one candidate into `out_dir`; returns the reply sent to the engine, with its phases
    (seconds of replay, checks, codegen, compile). With CLAIM_JOB ({"dir", "tag"}) the candidate's
    `source_key` is claimed first: a source another build claimed is not built again (status
    "duplicate"; the engine gives it the first one's result)."""
    t0 = time.perf_counter()
    phases: dict = {}
    key = None
    try:
        scheduled = checked_schedule(mod, source, target, phases)
        if claim_job is not None:
            key = source_key(scheduled, target, phases, claim_job["tag"])
            if not claim(claim_job["dir"], key):
                return {"status": "duplicate", "source_key": key, "build_s": time.perf_counter() - t0,
                        "phases": _timings(phases)}
        phases.pop("lowered", None)
        artifact = _export(_compile(scheduled, target, phases), target, out_dir, phases)
    except Exception as exc:  # noqa: BLE001 - tvm.compile reports lowering and codegen failures as TVM errors
        reply = _failure(exc, t0)
        reply.update(phases=_timings(phases), source_key=key)
        return reply
    return {"status": "ok", "artifact": str(artifact), "build_s": time.perf_counter() - t0,
            "phases": _timings(phases), "source_key": key}


def _failure(exc: BaseException, t0: float) -> dict:
    """The reply for a build that raised EXC (started at T0): a replay error, or a build error in
    our words (BuildError, NvccError) or TVM's."""
    if isinstance(exc, ReplayError):
        status, message = "replay_error", str(exc)
    elif isinstance(exc, (BuildError, NvccError)):
        status, message = "build_error", str(exc)
    else:
        status, message = "build_error", tvm_message(exc)
    return {"status": status, "message": message, "build_s": time.perf_counter() - t0}


def entry_name(i: int) -> str:
    """The function name of candidate I in a group's library (its kernels are named after it)."""
    return f"main_c{i}"


def build_group(mod, sources: list, target, out_dir: Path, claim_job=None) -> list:
    """Build several candidates of one workload into one library, one reply per source (in order).

    Each source is scheduled and checked alone (`checked_schedule`, as in `compile_checked`); the
    schedules that pass are renamed (`entry_name`)
    and compiled as one module: one `tvm.compile`, one export and, for CUDA, one translation unit
    for nvcc, whose fixed cost per call dominates small kernels' builds (benchmarks/
    bench_nvcc_batch.py: 8 kernels in one call 2.4-5.8x faster than 8 calls). A reply that is "ok"
    names the shared artifact and its `entry`; its `build_s` is its own scheduling plus an equal
    share of the shared compile. When the shared compile fails, each candidate is built alone, so
    that the failure is its own candidate's and the others are not lost."""
    import tvm

    replies: list = [None] * len(sources)
    scheduled: dict = {}
    own_s: dict = {}
    keys: dict = {}
    own_phases: dict = {}
    for i, source in enumerate(sources):
        t0 = time.perf_counter()
        phases = own_phases[i] = {}
        try:
            one = checked_schedule(mod, source, target, phases)
            if claim_job is not None:
                keys[i] = source_key(one, target, phases, claim_job["tag"])
                if not claim(claim_job["dir"], keys[i]):
                    replies[i] = {"status": "duplicate", "source_key": keys[i],
                                  "build_s": time.perf_counter() - t0, "phases": _timings(phases)}
                    continue
            phases.pop("lowered", None)
            scheduled[i] = one
            own_s[i] = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001 - TVM's own error types too
            replies[i] = _failure(exc, t0)
            replies[i]["phases"] = _timings(phases)
    if not scheduled:
        return replies
    t0 = time.perf_counter()
    shared: dict = {}
    try:
        funcs = {}
        for i, one in scheduled.items():
            name = entry_name(i)
            funcs[tvm.ir.GlobalVar(name)] = one["main"].with_attr("global_symbol", name)
        artifact = _export(_compile(tvm.IRModule(funcs), target, shared), target, out_dir, shared)
    except Exception:  # noqa: BLE001 - one candidate's lowering or nvcc error: find whose, alone
        for i in scheduled:
            replies[i] = build(mod, sources[i], target, out_dir / f"c{i}")
            replies[i]["source_key"] = keys.get(i)    # its claim stands: it was this candidate's
        return replies
    share = (time.perf_counter() - t0) / len(scheduled)
    for i in scheduled:
        phases = {**_timings(own_phases[i]), **{k: v / len(scheduled) for k, v in shared.items()}}
        replies[i] = {"status": "ok", "artifact": str(artifact), "entry": entry_name(i), "build_s": own_s[i] + share,
                      "phases": phases, "source_key": keys.get(i)}
    return replies

"""Building one candidate, in a build worker: schedule, check, compile, export.

The schedule and its checks are the TVM bridge's compile check (`dragon_dsl.tvm.compile.
checked_schedule`: a trace replayed exactly as TVM does, a scheduled IRModule, dlight's rules or
the workload as it is; for GPU targets the checks TVM 0.27's compile does not make, among them
TVM's own `VerifyGPUCode` limits). `tvm.compile` builds it; for CUDA the source must then compile
with nvcc (nvcc.py); the cubin is kept beside the exported library so the GPU worker loads it
instead of compiling again.
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
from dragon_dsl.tvm.compile import BuildError, ReplayError, add_seconds, checked_schedule
from dragon_dsl.tvm.errors import tvm_message


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


def _timings(phases: dict) -> dict:
    """The phases of a reply: seconds only (the lowered module stays in the worker)."""
    return {k: v for k, v in phases.items() if isinstance(v, float)}


def source_key(scheduled, target, phases: dict, tag: str) -> str:
    """The identity of what a candidate compiles to, prefixed by TAG (the measurement's
    configuration). Two traces with one key give one source: one is built and measured, the other
    gets its result (`Engine(dedupe_sources=True)`).
      * GPU targets: the sha256 of the module `check_gpu` lowered with the default TIR pipeline
        (what codegen turns into CUDA source), printed as TVMScript. Printed text, not TVM's
        structural hash: a lowered module's hash differs from one process to the next, and the
        build workers must agree;
      * CPU targets: TVM's structural hash of the scheduled module (stable across processes; it
        names the workload's hash too). Lowering only for the key cost half a build's codegen on
        the CPU (measured in benchmarks/bench_measure.py), more than the duplicates it finds.
    Its cost counts as "checks"."""
    import tvm_ffi

    t0 = time.perf_counter()
    lowered = phases.pop("lowered", None)
    if lowered is not None:
        digest = hashlib.sha256(lowered.script().encode("utf-8")).hexdigest()[:32]
    else:
        digest = f"s{tvm_ffi.structural_hash(scheduled) & 0xFFFFFFFFFFFFFFFF:016x}"
    add_seconds(phases, "checks", time.perf_counter() - t0)
    return f"{tag}-{digest}"


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
        add_seconds(phases, "compile", time.perf_counter() - t0)
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
        add_seconds(phases, "codegen", time.perf_counter() - t0 - compiler)
        add_seconds(phases, "compile", compiler)


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

    Each source is scheduled and checked alone (`checked_schedule`, as in `build`); the
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

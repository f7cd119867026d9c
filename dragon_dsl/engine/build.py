"""Building one candidate, in a build worker: schedule, check, compile, export.

The schedule and its checks are the TVM bridge's compile check (`dragon_dsl.tvm.compile.
checked_schedule`: a trace replayed exactly as TVM does, a scheduled IRModule, dlight's rules or
the workload as it is; for GPU targets the checks TVM 0.27's compile does not make, among them
TVM's own `VerifyGPUCode` limits). `compile_scheduled` builds it (for a GPU, from the module the
checks lowered: each candidate is lowered once); for CUDA the source must then compile with nvcc
(nvcc.py); the cubin is kept beside the exported library so the GPU worker loads it
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

from dragon_dsl.engine.nvcc import NvccError, compile_cubin, trim_preamble
from dragon_dsl.tvm.compile import (
    BuildError,
    ReplayError,
    add_seconds,
    check_scheduled,
    checked_schedule,
    compile_scheduled,
    schedule,
)
from dragon_dsl.tvm.errors import tvm_message

_compiled_by_tvm: list = []


def install_compile_probe(trim: bool = True) -> None:
    """Note every CUDA compilation TVM itself makes (it does so at build time on GPU machines).
    With TRIM, the source goes to TVM's compiler without the type traits it does not use
    (`nvcc.trim_preamble`: the same kernels, compiled several times faster by NVRTC); a trimmed
    source that fails is compiled again as TVM wrote it, so that a failure is TVM's own."""
    import tvm_ffi

    original = tvm_ffi.get_global_func("tvm_callback_cuda_compile", allow_missing=True)
    if original is None:
        return

    def probe(code, *rest):
        t0 = time.perf_counter()
        try:
            trimmed = trim_preamble(str(code)) if trim else None
            if trimmed is not None and trimmed != str(code):
                try:
                    return original(trimmed, *rest)
                except Exception:
                    pass
            return original(code, *rest)
        finally:
            _compiled_by_tvm.append(time.perf_counter() - t0)

    tvm_ffi.register_global_func("tvm_callback_cuda_compile", probe, override=True)


def _timings(phases: dict) -> dict:
    """The phases of a reply: seconds only (the lowered module stays in the worker)."""
    return {k: v for k, v in phases.items() if isinstance(v, float)}


def scheduled_key(scheduled, tag: str) -> str:
    """The first identity of what a candidate compiles to, prefixed by TAG (the measurement's
    configuration): TVM's structural hash of the scheduled module (stable across processes, and
    it names the workload too). Two candidates with one key are one program: one is built and
    measured, the other gets its result (`Engine(dedupe_sources=True)`). It is taken right after
    the replay, before any check or lowering: on the CUDA corpus' candidates it finds 154 of the
    157 copies that `lowered_key` finds, at 0.1 ms instead of a lowering each."""
    import tvm_ffi

    return f"{tag}-s{tvm_ffi.structural_hash(scheduled) & 0xFFFFFFFFFFFFFFFF:016x}"


def lowered_key(lowered, tag: str) -> str:
    """The second identity, for GPU targets: the sha256 of the module `check_gpu` lowered with
    the default TIR pipeline (what codegen turns into CUDA source), printed as TVMScript. Printed
    text, not TVM's structural hash: a lowered module's hash differs from one process to the
    next, and the build workers must agree. It finds the copies that differ before lowering only
    (an annotation that changes nothing, for one). On CPU targets lowering only for a key cost
    half a build's codegen (benchmarks/bench_measure.py), more than the copies it finds."""
    return f"{tag}-{hashlib.sha256(lowered.script().encode('utf-8')).hexdigest()[:32]}"


def _claimed(claim_job, key_of, claims: list, phases: dict, t0: float) -> dict | None:
    """Claim the key KEY_OF() makes (added to CLAIMS, the keys this build holds); None when it is
    this build's, else the "duplicate" reply (the engine gives the candidate the result of the
    key's first build). Making the key and claiming it count as "checks"."""
    t1 = time.perf_counter()
    key = key_of()
    mine = claim(claim_job["dir"], key)
    add_seconds(phases, "checks", time.perf_counter() - t1)
    if mine:
        claims.append(key)
        return None
    return {
        "status": "duplicate",
        "source_key": key,
        "claimed": list(claims),
        "build_s": time.perf_counter() - t0,
        "phases": _timings(phases),
    }


def claimed_schedule(mod, source: dict, target, phases: dict, claim_job, claims: list, t0: float):
    """`checked_schedule` with the claims of `dragon measure`'s dedupe (CLAIM_JOB: {"dir", "tag"},
    or None: no claims; CLAIMS gets the keys this build holds, also when a check raises):
    (the scheduled module, None), or (None, the "duplicate" reply) when another build claimed the
    same program first: before the checks (`scheduled_key`) or, for GPU targets, after the
    lowering they make (`lowered_key`)."""
    if claim_job is None:
        return checked_schedule(mod, source, target, phases), None
    t1 = time.perf_counter()
    try:
        scheduled = schedule(mod, source, target)
    finally:
        add_seconds(phases, "replay", time.perf_counter() - t1)
    duplicate = _claimed(claim_job, lambda: scheduled_key(scheduled, claim_job["tag"]), claims, phases, t0)
    if duplicate is None:
        check_scheduled(scheduled, target, phases)
        lowered = phases.get("lowered")
        if lowered is not None:
            duplicate = _claimed(claim_job, lambda: lowered_key(lowered, claim_job["tag"]), claims, phases, t0)
    return (None, duplicate) if duplicate is not None else (scheduled, None)


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


def _compile(scheduled, target, phases=None, lowered=None):
    """`compile_scheduled` (`tvm.compile`, or only its codegen where the checks LOWERED the module
    already), its seconds split into "codegen" and "compile" (the CUDA compiler TVM calls)."""
    _compiled_by_tvm.clear()
    t0 = time.perf_counter()
    try:
        return compile_scheduled(scheduled, target, lowered)
    finally:
        compiler = sum(_compiled_by_tvm)
        add_seconds(phases, "codegen", time.perf_counter() - t0 - compiler)
        add_seconds(phases, "compile", compiler)


def build(mod, source: dict, target, out_dir: Path, claim_job=None) -> dict:
    """Build one candidate into `out_dir`; returns the reply sent to the engine, with its phases
    (seconds of replay, checks, codegen, compile). With CLAIM_JOB ({"dir", "tag"}) the candidate's
    program is claimed (`claimed_schedule`): one another build claimed is not built again (status
    "duplicate", `source_key` the key found claimed; the engine gives it the first one's result).
    Every reply names the keys this build holds (`claimed`): their copies get its result."""
    t0 = time.perf_counter()
    phases: dict = {}
    claims: list = []
    try:
        scheduled, duplicate = claimed_schedule(mod, source, target, phases, claim_job, claims, t0)
        if duplicate is not None:
            return duplicate
        lowered = phases.pop("lowered", None)
        artifact = _export(_compile(scheduled, target, phases, lowered), target, out_dir, phases)
    except Exception as exc:
        reply = _failure(exc, t0)
        reply.update(phases=_timings(phases), claimed=claims)
        return reply
    return {
        "status": "ok",
        "artifact": str(artifact),
        "build_s": time.perf_counter() - t0,
        "phases": _timings(phases),
        "claimed": claims,
    }


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

    Each source is scheduled, checked and claimed alone (`claimed_schedule`, as in `build`); the
    schedules that pass are renamed (`entry_name`)
    and compiled as one module: one `tvm.compile`, one export and, for CUDA, one translation unit
    for nvcc, whose fixed cost per call dominates small kernels' builds (8 kernels in one call
    measured 2.4-5.8x faster than 8 calls). A reply that is "ok"
    names the shared artifact and its `entry`; its `build_s` is its own scheduling plus an equal
    share of the shared compile. When the shared compile fails, each candidate is built alone, so
    that the failure is its own candidate's and the others are not lost."""
    import tvm

    replies: list = [None] * len(sources)
    scheduled: dict = {}
    own_s: dict = {}
    claims: dict = {}
    own_phases: dict = {}
    for i, source in enumerate(sources):
        t0 = time.perf_counter()
        phases = own_phases[i] = {}
        claims[i] = []
        try:
            one, duplicate = claimed_schedule(mod, source, target, phases, claim_job, claims[i], t0)
            if duplicate is not None:
                replies[i] = duplicate
                continue
            phases.pop("lowered", None)  # a group is lowered again as one module
            scheduled[i] = one
            own_s[i] = time.perf_counter() - t0
        except Exception as exc:
            replies[i] = _failure(exc, t0)
            replies[i].update(phases=_timings(phases), claimed=claims[i])
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
    except Exception:
        for i in scheduled:
            replies[i] = build(mod, sources[i], target, out_dir / f"c{i}")
            replies[i]["claimed"] = claims[i]  # its claims stand: they were this candidate's
        return replies
    share = (time.perf_counter() - t0) / len(scheduled)
    for i in scheduled:
        phases = {**_timings(own_phases[i]), **{k: v / len(scheduled) for k, v in shared.items()}}
        replies[i] = {
            "status": "ok",
            "artifact": str(artifact),
            "entry": entry_name(i),
            "build_s": own_s[i] + share,
            "phases": phases,
            "claimed": claims[i],
        }
    return replies

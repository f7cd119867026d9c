"""The verifier's reference: the unscheduled workload built for llvm and run on the CPU
(in a build worker), on every input set; stored as `.npz` archives: one archive (the results
cache's bytes), or a folder of archives of parts of the input sets, which `load` merges in set order
(the engine's work dir: a big workload's sets are computed in parallel, and each build worker
writes its part where the device workers read it, with no merged copy in between).

Layout of the archive: `meta` (JSON: verifier version, set names, arguments with
roles) and, per set s and argument a, `s/a/in` (what the kernel reads) and
`s/a/out` (what the reference left in a written argument). bfloat16 arrays are
stored as their uint16 bits.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dragon_dsl.engine.inputs import VERIFIER_VERSION, input_sets, np_dtype
from dragon_dsl.engine.signature import Arg


def config_key(n_random: int) -> str:
    """The verifier configuration a stored reference belongs to."""
    return json.dumps({"verifier": VERIFIER_VERSION, "random_sets": n_random}, sort_keys=True)


@dataclass
class Reference:
    args: list  # [Arg]
    sets: list  # [(name, {arg: input array}, {arg: expected array})]

    @property
    def outputs(self) -> list:
        return [a for a in self.args if a.written]


def _store(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint16) if a.dtype.name == "bfloat16" else a


def _restore(a: np.ndarray, dtype: str) -> np.ndarray:
    return a.view(np_dtype(dtype)) if dtype == "bfloat16" else a


def _arrays(ref: Reference) -> dict:
    arrays = {
        "meta": np.frombuffer(
            json.dumps(
                {
                    "verifier": VERIFIER_VERSION,
                    "sets": [name for name, _, _ in ref.sets],
                    "args": [a.to_json() for a in ref.args],
                }
            ).encode(),
            dtype=np.uint8,
        )
    }
    for name, inputs, expected in ref.sets:
        for arg, value in inputs.items():
            arrays[f"{name}/{arg}/in"] = _store(value)
        for arg, value in expected.items():
            arrays[f"{name}/{arg}/out"] = _store(value)
    return arrays


def to_bytes(ref: Reference) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **_arrays(ref))
    return buf.getvalue()


def save(ref: Reference, path) -> None:
    """REF written to PATH as `to_bytes` would write it, without a copy of it in memory."""
    with open(path, "wb") as handle:
        np.savez(handle, **_arrays(ref))


def from_bytes(data: bytes) -> Reference:
    return _read(io.BytesIO(data))


def load(path) -> Reference:
    """The reference stored at PATH: one archive, or a folder of the archives part0.npz, part1.npz, ...
    of consecutive input sets (merged in that order)."""
    path = Path(path)
    if not path.is_dir():
        return _read(path)
    files = sorted(path.glob("part*.npz"), key=lambda f: int(f.stem[len("part") :]))
    if not files:
        raise FileNotFoundError(f"{path}: no part*.npz archive of a reference")
    parts = [_read(f) for f in files]
    return Reference(parts[0].args, [s for part in parts for s in part.sets])


def _read(source) -> Reference:
    with np.load(source) as z:
        meta = json.loads(z["meta"].tobytes().decode())
        args = [Arg.from_json(a) for a in meta["args"]]
        dtypes = {a.name: a.dtype for a in args}
        sets = []
        for name in meta["sets"]:
            inputs = {a.name: _restore(z[f"{name}/{a.name}/in"], a.dtype) for a in args if a.role != "output"}
            expected = {a.name: _restore(z[f"{name}/{a.name}/out"], dtypes[a.name]) for a in args if a.written}
            sets.append((name, inputs, expected))
    return Reference(args, sets)


def compute(mod, base_seed: int, n_random: int, only=None) -> Reference:
    """Run the unscheduled workload on llvm over every input set (or the sets numbered in `only`:
    the engine computes the sets of one reference in parallel and merges them). The program runs
    with its reduction loops reordered for memory access (`reference_order`) and compiled for the
    host's vector units (`reference_target`): the same arithmetic, in the same order for every
    value, as the program as written (the reference test compares the two bit for bit)."""
    import tvm

    from dragon_dsl.engine.run import call, make_tensors, read_outputs
    from dragon_dsl.engine.signature import signature

    args = signature(mod["main"])
    executable = tvm.compile(reference_order(mod), tvm.target.Target(reference_target()))
    func = executable.mod["main"]
    dev = tvm.cpu(0)
    sets = []
    for name, inputs in input_sets(args, base_seed, n_random, only):
        tensors = make_tensors(dev, args, inputs)
        call(func, dev, tensors)
        sets.append((name, inputs, read_outputs(args, tensors)))
    return Reference(args, sets)


# --- the reference program: the unscheduled one, faster, value for value the same ------------------
#: x86 features that change how fast the reference runs, not what it computes: F16C converts
#: float16 in one instruction (without it LLVM calls a library routine per value), AVX2 gives
#: 8-lane float32 arithmetic; FMA is kept off, since a fused multiply-add rounds once where the
#: program as written rounds twice
_FAST_FEATURES = ("f16c", "avx2")


def reference_target() -> dict:
    """The llvm target the reference is compiled for: the host's F16C and AVX2 when its CPU has
    both (Linux's /proc/cpuinfo says), with FMA off; plain llvm otherwise."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            flags = next((line.split(":", 1)[1].split() for line in handle if line.startswith("flags")), [])
    except OSError:
        flags = []
    if all(f in flags for f in _FAST_FEATURES):
        return {"kind": "llvm", "mattr": [f"+{f}" for f in _FAST_FEATURES] + ["-fma"]}
    return {"kind": "llvm"}


def _uses(expr, var) -> bool:
    from tvm.tirx.analysis.analysis import undefined_vars

    return any(v.same_as(var) for v in undefined_vars(expr))


def access_cost(block, var) -> int:
    """How badly the block's accesses move when VAR is the innermost loop: per buffer region it
    reads or writes, 0 when the region does not move with VAR, 1 when VAR steps along its last
    dimension by one element, 8 otherwise (a stride through memory)."""
    import tvm
    from tvm.sym import detect_linear_equation

    cost = 0
    for region in list(block.reads) + list(block.writes):
        index = [r.min for r in region.region]
        dims = [i for i, e in enumerate(index) if _uses(e, var)]
        if not dims:
            continue
        coef = detect_linear_equation(index[-1], [var]) if dims == [len(index) - 1] else []
        unit = len(coef) == 2 and isinstance(coef[0], tvm.tirx.IntImm) and coef[0].value == 1
        cost += 1 if unit else 8
    return cost


def reference_order(mod):
    """MOD with the loops of its reduction blocks reordered for memory access, every value
    computed as before: a block written as `for s..., r...` (spatial loops, then reduction loops,
    each loop one of the block's axes) gets its innermost spatial loop moved inside the reduction
    loops when that makes its accesses cheaper (`access_cost`); a matmul's `i, j, k` becomes
    `i, k, j`, which reads B along its rows. Each output value still takes its reduction steps in
    the same order, starting from the same init (`decompose_reduction` writes it first), so every
    value is the same, bit for bit. Blocks of any other shape are left as written."""
    import tvm
    from tvm import s_tir

    from dragon_dsl.tvm.blocks import block_rvs, type_key

    try:
        sch = s_tir.Schedule(mod)
        for rv in block_rvs(sch)[1:]:
            block, loops = sch.get(rv), sch.get_loops(rv)
            if len(loops) < 2 or len(loops) != len(block.iter_vars):
                continue
            realize = sch.get(loops[-1]).body
            if type_key(realize) != "s_tir.SBlockRealize" or not all(
                v.same_as(sch.get(lp).loop_var) for v, lp in zip(realize.iter_values, loops)
            ):
                continue
            if not all(isinstance(sch.get(lp).extent, tvm.tirx.IntImm) for lp in loops):
                continue
            kinds = [int(iv.iter_type) for iv in block.iter_vars]  # 0: spatial, 2: reduction
            if 2 not in kinds or kinds.index(2) == 0:
                continue
            first = kinds.index(2)
            if any(k != 0 for k in kinds[:first]) or any(k != 2 for k in kinds[first:]):
                continue
            spatial, reduction = block.iter_vars[first - 1].var, block.iter_vars[-1].var
            if access_cost(block, spatial) < access_cost(block, reduction):
                sch.reorder(*loops[: first - 1], *loops[first:], loops[first - 1])
                if block.init is not None:
                    sch.decompose_reduction(rv, loops[first])
        return sch.mod
    except Exception:
        return mod

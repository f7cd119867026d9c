"""The verifier's reference runs the unscheduled program with its reduction loops reordered for
memory access and compiled for the host's vector units (reference.reference_order,
reference_target): it must compute every value exactly as the program as written does. Checked
bit for bit on the smallest of a few workloads of every family the generator knows, corpus and
real-operator families alike (float32, float16, bfloat16, int8), on all three kinds of input set."""

from __future__ import annotations

import numpy as np
import pytest

from dragon_dsl.engine import reference as R

BIG = 2e7  # FLOPs above which a workload is checked on one input set (as written, fp16 runs at 70 MFLOP/s)


def _smallest(family: str):
    """(name, module) of the smallest of a few workloads the generator draws for FAMILY."""
    from dragon_dsl.corpus.generator import generate
    from dragon_dsl.engine.signature import signature
    from dragon_dsl.tvm.workload import estimate_flops

    best = None
    for spec in generate(8, seed=3, families=[family]):
        mod = spec.build()
        flops = estimate_flops(mod)
        size = sum(int(np.prod(a.shape)) for a in signature(mod["main"]))  # elementwise work has no FLOPs
        if best is None or (flops, size) < best[0]:
            best = ((flops, size), spec.name, mod)
    (flops, _size), name, mod = best
    return flops, name, mod


def _families() -> list:
    from dragon_dsl.corpus.families import ALL_FAMILIES

    return sorted(ALL_FAMILIES)


def _as_written(mod, only) -> list:
    import tvm

    from dragon_dsl.engine.inputs import input_sets
    from dragon_dsl.engine.run import call, make_tensors, read_outputs
    from dragon_dsl.engine.signature import signature

    args = signature(mod["main"])
    func = tvm.compile(mod, tvm.target.Target({"kind": "llvm"})).mod["main"]
    out = []
    for _name, inputs in input_sets(args, 11, 1, only):
        tensors = make_tensors(tvm.cpu(0), args, inputs)
        call(func, tvm.cpu(0), tensors)
        out.append(read_outputs(args, tensors))
    return out


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


@pytest.mark.parametrize("family", _families())
def test_the_reference_program_computes_every_value_as_written(family):
    flops, name, mod = _smallest(family)
    only = None if flops <= BIG else [0]  # a real operator's LLM shapes: the random set only
    fast = R.compute(mod, 11, 1, only)
    written = _as_written(mod, only)
    assert len(fast.sets) == len(written) == (3 if only is None else 1)
    for (set_name, _inputs, got), want in zip(fast.sets, written):
        assert set(got) == set(want)
        for arg in got:
            assert _bits(got[arg]) == _bits(want[arg]), f"{name}: output {arg}, input set {set_name} differs"


def _matmul(order: str):
    from dragon_dsl.tvm.workload import load_workload

    a, b = ("A[v_i, v_k]", "B[v_k, v_j]") if order == "ik,kj" else ("A[v_i, v_k]", "B[v_j, v_k]")
    shape_b = "(64, 32)" if order == "ik,kj" else "(32, 64)"
    return load_workload(f"""
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 64), "float16"), B: T.Buffer({shape_b}, "float16"), C: T.Buffer((16, 32), "float32")):
    for i, j, k in T.grid(16, 32, 64):
        with T.sblock("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[v_i, v_j] = T.float32(0.0)
            C[v_i, v_j] = C[v_i, v_j] + T.Cast("float32", {a}) * T.Cast("float32", {b})
""")


def _loop_order(mod) -> list:
    from tvm import s_tir

    sch = s_tir.Schedule(mod)
    name = "C_update" if "C_update" in mod.script() else "C"  # decompose_reduction's name for the update
    return [str(sch.get(lp).loop_var) for lp in sch.get_loops(sch.get_sblock(name))]


def test_a_matmul_reads_b_along_its_rows_and_a_transposed_one_is_left_as_written():
    assert _loop_order(R.reference_order(_matmul("ik,kj"))) == ["i", "k", "j"]  # B[k, j]: j innermost
    assert _loop_order(R.reference_order(_matmul("ik,jk"))) == ["i", "j", "k"]  # B[j, k]: k already is


def test_the_target_adds_only_what_the_cpu_has(monkeypatch, tmp_path):
    import builtins

    real_open = builtins.open

    def cpuinfo(flags):
        def fake(path, *a, **k):
            if path == "/proc/cpuinfo":
                f = tmp_path / "cpuinfo"
                f.write_text(f"processor : 0\nflags\t\t: {flags}\n")
                return real_open(f, *a, **k)
            return real_open(path, *a, **k)

        return fake

    monkeypatch.setattr(builtins, "open", cpuinfo("fpu sse2 avx avx2 f16c fma"))
    assert R.reference_target() == {"kind": "llvm", "mattr": ["+f16c", "+avx2", "-fma"]}
    monkeypatch.setattr(builtins, "open", cpuinfo("fpu sse2 avx"))
    assert R.reference_target() == {"kind": "llvm"}

"""FLOPs and bytes from the TensorIR, discovery, and the vendor mapping (PyTorch on the CPU)."""

from pathlib import Path

import numpy as np
import pytest

WL = Path(__file__).resolve().parents[1] / "data" / "workloads"


@pytest.mark.parametrize(
    "name, flops, nbytes",
    [
        ("matmul_64", 2 * 64**3, 3 * 64 * 64 * 4),
        # max (1 op) + exp(x - max) (2) + sum (1) + divide (1) per element of 64 x 64
        ("softmax_64", 5 * 64 * 64, 2 * 64 * 64 * 4),
        ("transpose_64x32", 0, 2 * 64 * 32 * 4),
        # conv 7x7x3, stride 2, out 1x112x112x64: 2 * 112 * 112 * 64 * 147; padding costs nothing
        ("c2d_0", 2 * 112 * 112 * 64 * 147, (224 * 224 * 3 + 7 * 7 * 3 * 64 + 112 * 112 * 64) * 4),
    ],
)
def test_flops_and_bytes(name, flops, nbytes):
    from dragon_dsl.eval.workload_info import analyse
    from dragon_dsl.tvm.workload import load_workload

    info = analyse(load_workload(str(WL / f"{name}.tvmscript")))
    assert (info.flops, info.bytes) == (flops, nbytes)


def test_compute_dtype_is_the_input_dtype():
    from dragon_dsl.eval.workload_info import analyse
    from dragon_dsl.tvm.workload import load_workload

    assert analyse(load_workload(str(WL / "dense_u8i8_16x32x16.tvmscript"))).dtype == "uint8"


def test_discover_families_and_scripts(tmp_path):
    from dragon_dsl.eval.discover import EvalInputError, discover

    for name in ("matmul_64", "c2d_0"):
        (tmp_path / f"{name}.tvmscript").write_text((WL / f"{name}.tvmscript").read_text())
    (tmp_path / "manifest.jsonl").write_text('{"name": "c2d_0", "family": "conv2d", "params": {"stride": 2}}\n')
    (tmp_path / "mine.dragon").write_text('workload "matmul_64.tvmscript"\ntarget "llvm"\n')
    (tmp_path / "stray.dragon").write_text('workload "missing.tvmscript"\n')
    entries, problems = discover(tmp_path)
    by = {e.name: e for e in entries}
    assert by["c2d_0"].family == "conv2d" and by["c2d_0"].params == {"stride": 2}
    assert by["matmul_64"].family == "matmul"
    assert [p.name for p in by["matmul_64"].scripts] == ["mine.dragon"]
    assert len(problems) == 1 and "stray.dragon" in problems[0]
    with pytest.raises(EvalInputError):
        discover(tmp_path / "nothing")


def _reference(args, fn, rng):
    from dragon_dsl.engine.reference import Reference

    sets = []
    for s in range(2):
        ins = {a.name: rng.standard_normal(a.shape).astype(a.dtype) for a in args if a.role == "input"}
        out = [a for a in args if a.role != "input"][0]
        sets.append((f"r{s}", ins, {out.name: fn(*[ins[a.name] for a in args if a.role == "input"])}))
    return Reference(args, sets)


def test_vendor_matches_and_refuses():
    pytest.importorskip("torch")
    from dragon_dsl.engine.signature import Arg
    from dragon_dsl.eval import vendor

    rng = np.random.default_rng(0)
    mm = [
        Arg("A", (8, 16), "float32", "input"),
        Arg("B", (16, 4), "float32", "input"),
        Arg("C", (8, 4), "float32", "output"),
    ]
    res = vendor.run(_reference(mm, lambda a, b: a @ b, rng), "matmul", {}, device="cpu", repeat=3)
    assert res.status == "ok" and res.op == "torch.matmul(A, B)" and res.latency_us > 0
    # same shapes, different values (a ReLU epilogue): no operator matches, so it is not applicable
    res = vendor.run(_reference(mm, lambda a, b: np.maximum(a @ b, 0), rng), "matmul_relu", {}, device="cpu")
    assert res.status == "not_applicable" and "outside the tolerance" in res.message
    sm = [Arg("A", (4, 32), "float32", "input"), Arg("T", (4, 32), "float32", "output")]

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    assert vendor.run(_reference(sm, softmax, rng), "softmax", {}, device="cpu").op == "torch.softmax(dim=-1)"
    assert vendor.run(_reference(sm, softmax, rng), "elementwise", {}, device="cpu").status == "not_applicable"


def test_vendor_conv2d_nhwc_from_shapes():
    pytest.importorskip("torch")
    import torch

    from dragon_dsl.engine.signature import Arg
    from dragon_dsl.eval import vendor

    x = [
        Arg("X", (1, 9, 9, 4), "float32", "input"),
        Arg("W", (3, 3, 4, 8), "float32", "input"),
        Arg("Y", (1, 5, 5, 8), "float32", "output"),
    ]

    def conv(a, w):  # stride 2, padding 1 as the workload would compute it
        t = torch.nn.functional.conv2d(
            torch.from_numpy(a).permute(0, 3, 1, 2), torch.from_numpy(w).permute(3, 2, 0, 1), stride=2, padding=1
        )
        return t.permute(0, 2, 3, 1).contiguous().numpy()

    res = vendor.run(_reference(x, conv, np.random.default_rng(1)), "conv2d", {}, device="cpu")
    assert res.status == "ok" and "stride=2, padding=1, dilation=1" in res.op

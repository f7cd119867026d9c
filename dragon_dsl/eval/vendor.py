"""The vendor-library method: the equivalent PyTorch operator (cuBLAS / cuDNN on CUDA).

Which operator: recognised from the workload's arguments (shapes and dtypes) and family,
as a short list of *candidate* PyTorch expressions; the verifier's reference decides. Each
candidate runs on the reference's inputs (the same seeded sets the engine's verifier uses,
computed from the unscheduled workload) and must match every expected output within the
engine's tolerance (`engine.compare`); the first candidate that matches is timed. A
workload no candidate matches is "not applicable" (no equivalent operator: a matmul with a
ReLU epilogue has a matmul's shapes but not its values), never a guess; the candidates
tried and why each failed are kept in the message.

Recognised: matrix product (A @ B, A @ B^T), batched matrix product (both layouts), softmax
over the last axis, layer norm and RMS norm over the last axis with a weight, and NHWC 2-D
convolution (grouped, strided, dilated; stride, padding and dilation from the manifest's
parameters, else every combination that yields the output's shape). Mixed precision
(float16 inputs, float32 output) runs the product in the input dtype and casts the result,
and is checked with the input dtype's tolerance.

fp32 runs without TF32 (`allow_tf32 = False`), as the H200 reference table does. Timing:
CUDA events around `number` calls (grown until one repeat lasts 1 ms), `repeat` repeats,
median per call. On CPU devices (tests) wall-clock time replaces the events.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class VendorResult:
    status: str  # "ok" | "not_applicable"
    op: str = ""
    latency_us: float | None = None
    message: str = ""
    max_abs_err: float | None = None


def torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def candidates(family: str, params: dict, args: list) -> list:
    """[(name, fn(inputs: list of torch tensors) -> output tensor)] for a workload's signature.

    `args` are the engine's `Arg`s (name, shape, dtype, role); exactly one output is needed."""
    import torch
    import torch.nn.functional as F

    inputs = [a for a in args if a.role == "input"]
    outputs = [a for a in args if a.role != "input"]
    if len(outputs) != 1 or any(a.role == "inout" for a in outputs):
        return []
    out = outputs[0]
    shapes = [tuple(a.shape) for a in inputs]
    o = tuple(out.shape)
    found: list = []
    if len(inputs) == 2 and len(shapes[0]) == 2 and len(shapes[1]) == 2 and len(o) == 2:
        (m, k), b = shapes
        if b == (k, o[1]) and m == o[0]:
            found.append(("torch.matmul(A, B)", lambda x: torch.matmul(x[0], x[1])))
        if b == (o[1], k) and m == o[0]:
            found.append(("torch.matmul(A, B.T)", lambda x: torch.matmul(x[0], x[1].T)))
        if shapes[0] == (k, m) and b == (k, o[1]) and m == o[0]:
            found.append(("torch.matmul(A.T, B)", lambda x: torch.matmul(x[0].T, x[1])))
    if len(inputs) == 2 and len(shapes[0]) == 3 and len(shapes[1]) == 3 and len(o) == 3:
        (bs, m, k), b = shapes
        if b == (bs, k, o[2]) and (bs, m) == o[:2]:
            found.append(("torch.bmm(A, B)", lambda x: torch.bmm(x[0], x[1])))
        if b == (bs, o[2], k) and (bs, m) == o[:2]:
            found.append(("torch.bmm(A, B^T)", lambda x: torch.bmm(x[0], x[1].transpose(1, 2))))
    if len(inputs) == 1 and shapes[0] == o and len(o) >= 1 and ("softmax" in family or family in ("sfm",)):
        found.append(("torch.softmax(dim=-1)", lambda x: torch.softmax(x[0], dim=-1)))
    norm = "norm" in family or family == "nrm"
    if norm and len(inputs) == 2 and len(shapes[0]) == 2 and shapes[1] == (shapes[0][1],) and o == shapes[0]:
        n = shapes[0][1]
        found.append(("F.layer_norm", lambda x: F.layer_norm(x[0], (n,), weight=x[1], eps=1e-5)))
        found.append(("F.rms_norm", lambda x: F.rms_norm(x[0], (n,), weight=x[1], eps=1e-6)))
    if len(inputs) == 2 and len(shapes[0]) == 4 and len(shapes[1]) == 4 and len(o) == 4:
        found += _conv2d_nhwc(params, shapes[0], shapes[1], o)
    return found


def _conv2d_nhwc(params: dict, x: tuple, w: tuple, o: tuple) -> list:
    import torch.nn.functional as F

    n, h, wd, ci = x
    kh, kw, cig, co = w
    if o[0] != n or o[3] != co or cig == 0 or ci % cig:
        return []
    groups = ci // cig
    if "stride" in params:
        combos = [(int(params["stride"]), int(params.get("padding", 0)), int(params.get("dilation", 1)))]
    else:
        combos = list(itertools.product((1, 2), range(0, max(kh, kw) + 1), (1, 2, 3, 4)))
    found = []
    for stride, pad, dil in combos:
        oh = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1
        ow = (wd + 2 * pad - dil * (kw - 1) - 1) // stride + 1
        if (oh, ow) != o[1:3]:
            continue

        def fn(t, stride=stride, pad=pad, dil=dil):
            # NHWC as a channels-last NCHW view, weight (KH, KW, CI/g, CO) -> (CO, CI/g, KH, KW): no copies
            y = F.conv2d(
                t[0].permute(0, 3, 1, 2),
                t[1].permute(3, 2, 0, 1),
                stride=stride,
                padding=pad,
                dilation=dil,
                groups=groups,
            )
            return y.permute(0, 2, 3, 1)

        found.append((f"F.conv2d(stride={stride}, padding={pad}, dilation={dil}, groups={groups})", fn))
    return found[:8]


def _torch_dtype(dtype: str):
    import torch

    return {
        "float32": torch.float32,
        "float16": torch.float16,
        "bfloat16": torch.bfloat16,
        "float64": torch.float64,
        "int32": torch.int32,
        "int64": torch.int64,
        "int8": torch.int8,
        "uint8": torch.uint8,
    }[dtype]


def _to_torch(array, dtype: str, device: str):
    import numpy as np  # imported here: `dragon --help` builds this package's parser without numpy
    import torch

    if dtype == "bfloat16":
        return torch.from_numpy(array.view(np.uint16).astype(np.int16)).view(torch.bfloat16).to(device)
    return torch.from_numpy(np.ascontiguousarray(array)).to(device)


def _check_dtype(args: list) -> str:
    """The tolerance to check with: the narrowest float among the arguments."""
    order = ["float16", "bfloat16", "float32", "float64"]
    floats = [a.dtype for a in args if a.dtype in order]
    return min(floats, key=order.index) if floats else args[-1].dtype


def run(
    reference, family: str, params: dict, device: str = "cuda", repeat: int = 5, min_repeat_ms: float = 1.0
) -> VendorResult:
    """Find the matching PyTorch operator for a workload and time it (see the module docstring)."""
    import numpy as np
    import torch

    from dragon_dsl.engine import compare_outputs

    if device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    args = reference.args
    found = candidates(family, params, args)
    if not found:
        return VendorResult("not_applicable", message="no equivalent PyTorch operator for this signature")
    inputs = [a for a in args if a.role == "input"]
    (out,) = [a for a in args if a.role != "input"]
    if not all(a.dtype in ("float32", "float16", "bfloat16", "float64") for a in inputs + [out]):
        return VendorResult("not_applicable", message="only floating-point operators are mapped")
    tolerance_dtype = _check_dtype(args)
    out_dtype = _torch_dtype(out.dtype)
    tried = []
    for name, fn in found:
        ok, worst = True, 0.0
        for _, ins, expected in reference.sets:
            tensors = [_to_torch(ins[a.name], a.dtype, device) for a in inputs]
            try:
                with torch.no_grad():
                    got = fn(tensors).to(out_dtype)
            except RuntimeError as exc:  # a kernel the library does not have for these dtypes
                ok = False
                tried.append(f"{name}: {str(exc).splitlines()[0][:120]}")
                break
            got_np = got.float().cpu().numpy() if out.dtype == "bfloat16" else got.cpu().numpy()
            want = expected[out.name].astype(np.float32) if out.dtype == "bfloat16" else expected[out.name]
            verdict = compare_outputs(got_np, want, tolerance_dtype)
            worst = max(worst, verdict.max_abs)
            if verdict.bad or verdict.n_unwritten:
                ok = False
                tried.append(f"{name}: {verdict.bad} of {verdict.total} outside the tolerance")
                break
        if ok:
            tensors = [_to_torch(reference.sets[0][1][a.name], a.dtype, device) for a in inputs]
            latency = _time(lambda: fn(tensors).to(out_dtype), device, repeat, min_repeat_ms)
            return VendorResult("ok", name, latency, max_abs_err=worst)
    return VendorResult(
        "not_applicable", message=("no PyTorch operator matched the reference: " + "; ".join(tried))[:500]
    )


def _time(call: Callable, device: str, repeat: int, min_repeat_ms: float) -> float:
    """Median per-call latency in us."""
    import torch

    cuda = device.startswith("cuda")
    with torch.no_grad():
        for _ in range(3):
            call()
        if cuda:
            torch.cuda.synchronize()
        number = 1
        while True:
            elapsed_ms = _run_ms(call, number, cuda)
            if elapsed_ms >= min_repeat_ms or number >= 1 << 16:
                break
            number *= 2
        per_call = sorted(_run_ms(call, number, cuda) / number for _ in range(repeat))
    mid = len(per_call) // 2
    median = per_call[mid] if len(per_call) % 2 else 0.5 * (per_call[mid - 1] + per_call[mid])
    return 1e3 * median


def _run_ms(call: Callable, number: int, cuda: bool) -> float:
    import torch

    if cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(number):
            call()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))
    t0 = time.perf_counter()
    for _ in range(number):
        call()
    return 1e3 * (time.perf_counter() - t0)


# --- the evaluation's vendor method -----------------------------------------------------------
def method(ctx, entry) -> dict:
    """The evaluation's vendor row of one workload: timed once per repeat count and kept in
    OUT_DIR/cache/vendor.json (shared by the shards), under the GPU's lock."""
    from dragon_dsl.eval.candidates import new_row
    from dragon_dsl.eval.store import update_json

    if not ctx.engine.target.is_gpu:
        return new_row(entry, "construction", "vendor", "not_applicable", "PyTorch's vendor libraries run on CUDA only")
    if ctx.engine.device.is_remote:
        return new_row(entry, "construction", "vendor", "not_applicable", "PyTorch runs on this machine's GPU only")
    if not torch_available():
        return new_row(entry, "construction", "vendor", "not_available", "PyTorch is not installed")
    import torch

    if not torch.cuda.is_available():
        return new_row(entry, "construction", "vendor", "not_available", "PyTorch has no CUDA device here")
    key = f"{ctx.whash(entry.path)}|vendor|{ctx.repeat}"
    store = ctx.out_dir / "cache" / "vendor.json"
    stored = json.loads(store.read_text()) if store.exists() else {}
    if key not in stored:
        from dragon_dsl.engine import gpu_lock

        ref = ctx.engine.reference(str(entry.path), seeds=ctx.seeds)  # big ones are not in the cache
        with gpu_lock(0):  # the GPU PyTorch uses here; other engines' runs wait
            t0 = time.perf_counter()
            res = run(ref, entry.family, entry.params, "cuda", repeat=ctx.repeat)
        stored[key] = {
            "status": res.status,
            "op": res.op,
            "latency_us": res.latency_us,
            "message": res.message,
            "max_abs_err": res.max_abs_err,
            "wall_s": time.perf_counter() - t0,
            "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(),
        }
        stored = update_json(store, {key: stored[key]})
        cached = False
    else:
        cached = True
    rec = stored[key]
    if rec["status"] == "not_applicable":
        return new_row(entry, "construction", "vendor", "not_applicable", rec["message"])
    row = new_row(entry, "construction", "vendor", op=rec["op"])
    row["candidates"] = [
        {
            "status": rec["status"],
            "latency_us": rec["latency_us"],
            "cached": cached,
            "message": rec["message"],
            "max_abs_err": rec["max_abs_err"],
            "level": "time",
        }
    ]
    row["time_s"] = rec["wall_s"] if rec["status"] == "ok" else None
    return row

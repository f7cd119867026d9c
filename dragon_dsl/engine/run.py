"""Verifying and timing one built candidate on a device (in a device worker).

`verify` runs the kernel once per input set of the reference, with outputs
pre-filled (inputs.py), and compares every written argument (compare.py). A fill
that survives where the reference wrote is re-checked with a second fill: if it
survives again the output was never written (unwritten_output), otherwise the
kernel computed NaN or the sentinel itself (numeric_mismatch).

`time_kernel` uses TVM's time_evaluator: one discarded warm-up call, then `repeat`
timed repeats of `number` calls each (TVM grows `number` until a repeat lasts
`min_repeat_ms` when `number` is None), with the device synchronised around each
repeat; with `flush_bytes` TVM copies a buffer that large on the device before every
repeat, evicting the caches (L2 on a GPU). Latencies are per call, in microseconds.

`Staged` keeps a reference's input sets on one device: inputs are uploaded once and
the kernel reads them in place (a kernel reads its inputs; in-out arguments are
uploaded afresh for every run), outputs get their fill by a device-to-device copy
before every run, and the expected outputs are prepared once for the fast comparison
(compare.Expected). A device worker keeps the staging of its recent references, so a
candidate costs its own runs and one read-back per input set, not uploads of the
workload's data. A kernel that wrote out of bounds could have damaged what stays on
the device: a candidate that fails on reused staging is verified again on fresh
uploads, and that verdict stands.
"""

from __future__ import annotations

import contextlib

import numpy as np

from dragon_dsl.engine.compare import Expected
from dragon_dsl.engine.inputs import filled, np_dtype


class LaunchError(Exception):
    """The kernel failed while running (an exception from the runtime, e.g. a CUDA fault)."""


def contiguous(value) -> np.ndarray:
    """VALUE as a C-contiguous array of its own shape: `np.ascontiguousarray` turns a 0-d array into
    shape (1,), which a kernel taking a 0-d buffer (`T.Buffer((), "int32")`, a network's scalar
    mask bound) refuses at launch ("Mismatched a.ndim ... expected 0")."""
    return np.asarray(value, order="C")


def make_tensors(dev, args, inputs: dict, alternative: bool = False) -> list:
    import tvm

    tensors = []
    for arg in args:
        value = inputs[arg.name] if arg.role != "output" else filled(arg.shape, arg.dtype, alternative)
        tensors.append(tvm.runtime.tensor(contiguous(value), dev))
    return tensors


def random_tensors(dev, args_info: list, seed: int = 0) -> list:
    """Tensors for MetaSchedule's ArgInfo JSON (["TENSOR", dtype, shape]) when no workload is known."""
    import tvm

    rng = np.random.default_rng(seed)
    out = []
    for _, dtype, shape in args_info:
        if dtype.startswith(("float", "bfloat")):
            value = rng.uniform(-1.0, 1.0, size=shape).astype(np_dtype(dtype))
        else:
            value = np.zeros(shape, dtype=np_dtype(dtype))
        out.append(tvm.runtime.tensor(value, dev))
    return out


def call(func, dev, tensors) -> None:
    try:
        func(*tensors)
        dev.sync()
    except Exception as exc:  # the runtime reports kernel faults as TVM errors
        raise LaunchError(_first_line(exc)) from None


def read_outputs(args, tensors) -> dict:
    return {arg.name: t.numpy() for arg, t in zip(args, tensors, strict=True) if arg.written}


class Staged:
    """A reference's input sets on one device (see the module docstring)."""

    def __init__(self, dev, ref):
        self.dev, self.ref = dev, ref
        self.uses = 0
        self._inputs: dict = {}  # (set index, arg) -> device tensor
        self._outputs: dict = {}  # (set index, arg) -> device tensor, refilled before every run
        self._fills: dict = {}  # (arg, alternative) -> device tensor holding the fill
        self._expected: dict = {}  # (set index, arg) -> compare.Expected

    def tensors(self, index: int, alternative: bool = False) -> list:
        """The arguments for a run on input set `index`, outputs freshly filled."""
        import tvm

        inputs = self.ref.sets[index][1]
        out = []
        for arg in self.ref.args:
            key = (index, arg.name)
            if arg.role == "input":
                if key not in self._inputs:
                    self._inputs[key] = tvm.runtime.tensor(contiguous(inputs[arg.name]), self.dev)
                out.append(self._inputs[key])
            elif arg.role == "inout":
                out.append(tvm.runtime.tensor(contiguous(inputs[arg.name]), self.dev))
            else:
                fill_key = (arg.name, alternative)
                if fill_key not in self._fills:
                    self._fills[fill_key] = tvm.runtime.tensor(filled(arg.shape, arg.dtype, alternative), self.dev)
                if key not in self._outputs:
                    self._outputs[key] = tvm.runtime.empty(tuple(arg.shape), arg.dtype, self.dev)
                self._outputs[key].copyfrom(self._fills[fill_key])
                out.append(self._outputs[key])
        return out

    def expected(self, index: int, arg) -> Expected:
        key = (index, arg.name)
        if key not in self._expected:
            self._expected[key] = Expected(self.ref.sets[index][2][arg.name], arg.dtype)
        return self._expected[key]


def verify(func, staged: Staged, gpu=contextlib.nullcontext) -> dict:
    """Compare the kernel with the reference on every input set; the reply's verdict fields.
    `gpu()` is held around each set's GPU work (staging, the run, the read-back) and not while
    the outputs are compared on the CPU (devices.GpuHold)."""
    staged.uses += 1
    ref = staged.ref
    max_abs = max_rel = 0.0
    checked = 0
    for index, (set_name, _, _) in enumerate(ref.sets):
        with gpu():
            tensors = staged.tensors(index)
            call(func, staged.dev, tensors)
            got = read_outputs(ref.args, tensors)
        for arg in ref.outputs:
            verdict = staged.expected(index, arg).compare(got[arg.name])
            max_abs, max_rel = max(max_abs, verdict.max_abs), max(max_rel, verdict.max_rel)
            if verdict.n_unwritten:
                with gpu():
                    again = staged.tensors(index, alternative=True)
                    call(func, staged.dev, again)
                    second = again[ref.args.index(arg)].numpy()
                alt = filled(arg.shape, arg.dtype, alternative=True)
                confirmed = verdict.unwritten & (second == alt)
                if confirmed.any():
                    return _fail(
                        "unwritten_output",
                        checked,
                        max_abs,
                        max_rel,
                        f"output {arg.name}, input set {set_name}: {int(confirmed.sum())} of "
                        f"{verdict.total} values were never written",
                    )
            if verdict.bad or verdict.n_unwritten:
                n = verdict.bad + verdict.n_unwritten
                v_abs, v_rel, nan = verdict.max_abs, verdict.max_rel, ""
                if verdict.n_unwritten:  # written after all (the second fill showed it): NaN, wrong at any size
                    v_abs = v_rel = max_abs = max_rel = float("inf")
                    nan = f"; {verdict.n_unwritten} of them NaN where the reference has a number"
                return _fail(
                    "numeric_mismatch",
                    checked,
                    max_abs,
                    max_rel,
                    f"output {arg.name}, input set {set_name}: {n} of {verdict.total} values differ "
                    f"from the reference (max abs err {v_abs:.3g}, max rel err {v_rel:.3g}{nan})",
                )
        checked += 1
    return {"status": "ok", "n_checked": checked, "max_abs_err": max_abs, "max_rel_err": max_rel}


def verify_staged(func, staged: Staged, restage, gpu=contextlib.nullcontext) -> tuple:
    """(verdict, staging used): `verify`, and again on `restage()`'s fresh staging when it failed on
    staging an earlier candidate used (see the module docstring)."""
    reply = verify(func, staged, gpu)
    if reply["status"] != "ok" and staged.uses > 1:
        staged = restage()
        reply = verify(func, staged, gpu)
        reply["verified_again"] = True
    return reply, staged


def _fail(status, checked, max_abs, max_rel, message) -> dict:
    return {
        "status": status,
        "message": message,
        "n_checked": checked + 1,
        "max_abs_err": max_abs,
        "max_rel_err": max_rel,
    }


def time_kernel(
    module, dev, tensors, *, repeat: int, number, min_repeat_ms: float, flush_bytes: int, entry: str = "main"
) -> list:
    """Per-call latencies in microseconds, one per repeat, of the module's function ENTRY."""
    evaluator = module.time_evaluator(
        entry,
        dev,
        number=number or 1,
        repeat=repeat,
        min_repeat_ms=0 if number else max(1, int(round(min_repeat_ms))),
        cache_flush_bytes=int(flush_bytes),
    )
    try:
        results = evaluator(*tensors).results
    except Exception as exc:  # a fault during timing is a launch failure too
        raise LaunchError(_first_line(exc)) from None
    return [float(r) * 1e6 for r in results]


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip() and not ln.startswith("  File")]
    return (lines[-1] if lines else type(exc).__name__)[:400]

"""Comparing a kernel's outputs with the reference (numpy only).

Tolerances by dtype (`RTOL`): a value passes when |got - want| <= rtol * (scale + |want|),
where scale is the largest finite |want| of that output (1 when there is none or it
is 0), so cancellation near zero does not fail a correct kernel. Integers and bools
must match exactly. Where the reference is NaN any value is accepted; infinities
must match. `max_rel_err` is |got - want| / max(|want|, rtol * scale).

Fast path: most candidates pass, and a float64 pass over millions of values costs
hundreds of milliseconds. `Expected` precomputes, once per reference output, the
float32 tolerance shrunk by a margin that covers float32 rounding (1e-6 relative, over
8 units in the last place), so `|got - want| <= tol` in float32 everywhere implies the
exact float64 rule holds everywhere. When it does not hold everywhere (a NaN, an
infinity, a value near or past the tolerance), the exact float64 comparison decides:
the verdict is always the float64 rule's.

A position that still holds the pre-filled value (NaN, or the integer sentinel)
where the reference wrote something is a candidate for "unwritten"; the runner
confirms it with a second fill (see inputs.py) before reporting unwritten_output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dragon_dsl.engine.inputs import fill_value, is_float

RTOL = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2}


@dataclass
class Verdict:
    bad: int = 0                      # positions outside the tolerance (unwritten ones excluded)
    unwritten: np.ndarray = field(default=None)   # mask of positions that kept the fill
    total: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0

    @property
    def n_unwritten(self) -> int:
        return 0 if self.unwritten is None else int(self.unwritten.sum())


_FAST_MARGIN = 1.0 - 1e-6
_FAST_DTYPES = ("float32", "float16", "bfloat16")


class Expected:
    """One reference output, ready to be compared with many candidates' outputs."""

    def __init__(self, want: np.ndarray, dtype: str):
        self.want, self.dtype = np.asarray(want), dtype
        self.fast = None      # (want as float32, shrunk tolerance, 1 / max(|want|, rtol * scale))
        if dtype in _FAST_DTYPES:
            want32 = self.want.astype(np.float32)
            if np.isfinite(want32).all():
                rtol = RTOL[dtype]
                mag = np.abs(want32)
                scale = float(mag.max()) if mag.size else 0.0
                scale = scale if scale > 0 else 1.0
                tol = (rtol * _FAST_MARGIN * (scale + mag.astype(np.float64))).astype(np.float32)
                inv = (1.0 / np.maximum(mag.astype(np.float64), rtol * scale)).astype(np.float32)
                self.fast = (want32, tol, inv)

    def compare(self, got: np.ndarray) -> "Verdict":
        got = np.asarray(got)
        if got.shape != self.want.shape:
            raise ValueError(f"output shape {got.shape} != reference shape {self.want.shape}")
        if self.fast is not None:
            want32, tol, inv = self.fast
            err = np.abs(got.astype(np.float32, copy=False) - want32)
            if bool(np.all(err <= tol)):   # a NaN anywhere makes this False
                max_abs = float(err.max()) if err.size else 0.0
                max_rel = float(np.multiply(err, inv).max()) if err.size else 0.0
                return Verdict(0, None, int(err.size), max_abs, max_rel)
        return compare(got, self.want, self.dtype)


def compare(got: np.ndarray, want: np.ndarray, dtype: str) -> Verdict:
    """The exact rule (the module docstring); `Expected.compare` is the fast way to the same verdict."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise ValueError(f"output shape {got.shape} != reference shape {want.shape}")
    if is_float(dtype):
        return _compare_float(got.astype(np.float64), want.astype(np.float64), RTOL.get(dtype, 1e-4))
    return _compare_exact(got, want, dtype)


def _compare_float(got, want, rtol) -> Verdict:
    ref_nan = np.isnan(want)
    unwritten = np.isnan(got) & ~ref_nan
    checked = ~ref_nan & ~unwritten
    finite = np.isfinite(want) & checked
    scale = float(np.max(np.abs(want[finite]))) if finite.any() else 0.0
    scale = scale if scale > 0 else 1.0
    both_finite = finite & np.isfinite(got)
    err = np.zeros(want.shape)
    err[both_finite] = np.abs(got[both_finite] - want[both_finite])
    bad = both_finite & (err > rtol * (scale + np.abs(want)))
    # infinities and NaNs the reference does not have are wrong whatever their size
    inf_ref = checked & np.isinf(want)
    bad |= inf_ref & (got != want)
    bad |= finite & ~np.isfinite(got)
    max_abs = float(err.max()) if err.size else 0.0
    if (finite & ~np.isfinite(got)).any() or (inf_ref & (got != want)).any():
        max_abs = float("inf")
    rel = err / np.maximum(np.abs(want), rtol * scale)
    max_rel = float(rel[both_finite].max()) if both_finite.any() else 0.0
    if max_abs == float("inf"):
        max_rel = float("inf")
    return Verdict(int(bad.sum()), unwritten, int(want.size), max_abs, max_rel)


def _compare_exact(got, want, dtype) -> Verdict:
    sentinel = fill_value(dtype)
    unwritten = (got == sentinel) & (want != sentinel) if dtype != "bool" else np.zeros(want.shape, bool)
    bad = (got != want) & ~unwritten
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    max_abs = float(diff[~unwritten].max()) if (~unwritten).any() else 0.0
    rel = diff / np.maximum(np.abs(want.astype(np.float64)), 1.0)
    max_rel = float(rel[~unwritten].max()) if (~unwritten).any() else 0.0
    return Verdict(int(bad.sum()), unwritten, int(want.size), max_abs, max_rel)

"""Comparing a kernel's outputs with the reference (numpy only).

Tolerances by dtype (`RTOL`): a value passes when |got - want| <= rtol * (scale + |want|),
where scale is the largest finite |want| of that output (1 when there is none or it
is 0), so cancellation near zero does not fail a correct kernel. Integers and bools
must match exactly. Where the reference is NaN any value is accepted; infinities
must match. `max_rel_err` is |got - want| / max(|want|, rtol * scale).

Fast path: most candidates pass, and a float64 pass over millions of values costs
hundreds of milliseconds. `Expected` compares in float32, a cache-sized chunk at a time (an
RMSNorm of 7671 x 2560: 0.7 s a set through float64 arrays, 0.06 s this way), with the
tolerance shrunk by a margin, so `|got - want| <= tol` in float32 everywhere implies the exact
float64 rule holds everywhere: the margin (1e-6 relative, over 8 units in the last place) covers the rounding of
the tolerance's three float32 operations and of the difference, as long as every tolerance is a
normal float32 far from overflow (else there is no fast path). When it does not hold everywhere
(a NaN, an infinity, a value near or past the tolerance), the exact float64 comparison decides:
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
    bad: int = 0  # positions outside the tolerance (unwritten ones excluded)
    unwritten: np.ndarray = field(default=None)  # mask of positions that kept the fill
    total: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0

    @property
    def n_unwritten(self) -> int:
        return 0 if self.unwritten is None else int(self.unwritten.sum())


_FAST_MARGIN = 1.0 - 1e-6
# tolerances stay normal float32 numbers (smallest normal: 1.2e-38) and sums stay finite (largest: 3.4e38)
_FAST_LOWEST, _FAST_HIGHEST = 1e-30, 1e37
_CHUNK = 1 << 16  # values compared at a time: 256 KB a float32 buffer
_FAST_DTYPES = ("float32", "float16", "bfloat16")


class Expected:
    """One reference output, ready to be compared with many candidates' outputs."""

    def __init__(self, want: np.ndarray, dtype: str):
        self.want, self.dtype = np.asarray(want), dtype
        self.fast = None  # (want as float32, scale as float32, rtol * margin, rtol * scale as float32)
        if dtype in _FAST_DTYPES:
            want32 = self.want if self.want.dtype == np.float32 else self.want.astype(np.float32)
            if np.isfinite(want32).all():
                rtol = RTOL[dtype]
                scale = float(max(want32.max(), -want32.min())) if want32.size else 0.0  # no |want| array
                scale = scale if scale > 0 else 1.0
                if _FAST_LOWEST <= rtol * scale and scale <= _FAST_HIGHEST:
                    self.fast = (
                        want32.reshape(-1),
                        np.float32(scale),
                        np.float32(rtol * _FAST_MARGIN),
                        np.float32(rtol * scale),
                    )

    def compare(self, got: np.ndarray) -> Verdict:
        got = np.asarray(got)
        if got.shape != self.want.shape:
            raise ValueError(f"output shape {got.shape} != reference shape {self.want.shape}")
        if self.fast is not None:
            fast = self._fast(got.astype(np.float32, copy=False).reshape(-1))
            if fast is not None:
                return fast
        return compare(got, self.want, self.dtype)

    def _fast(self, got32: np.ndarray) -> Verdict | None:
        """The verdict when every value is within the shrunk tolerance, else None. Chunk by chunk
        (in cache, no array as large as the output allocated): the tolerance
        rtol * margin * (scale + |want|) and max(|want|, rtol * scale) are computed on the fly."""
        want32, scale, rtol_margin, rtol_scale = self.fast
        n = want32.size
        size = min(n, _CHUNK)
        err, mag, tol = (np.empty(size, np.float32) for _ in range(3))
        ok = np.empty(size, bool)
        max_abs = max_rel = 0.0
        for start in range(0, n, _CHUNK):
            m = min(_CHUNK, n - start)
            w, g = want32[start : start + m], got32[start : start + m]
            e, a, t, o = err[:m], mag[:m], tol[:m], ok[:m]
            np.subtract(g, w, out=e)
            np.abs(e, out=e)
            np.abs(w, out=a)
            np.add(a, scale, out=t)
            np.multiply(t, rtol_margin, out=t)
            if not np.less_equal(e, t, out=o).all():  # a NaN anywhere makes this False
                return None
            max_abs = max(max_abs, float(e.max()))
            np.maximum(a, rtol_scale, out=a)
            max_rel = max(max_rel, float(np.divide(e, a, out=e).max()))
        return Verdict(0, None, int(n), max_abs, max_rel)


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

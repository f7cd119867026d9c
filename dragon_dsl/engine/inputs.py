"""The verifier's input sets and output fills (numpy only).

For a workload with base seed s (from its structural hash) there are `n` random
sets, set i drawn from `numpy.random.default_rng([s, i])`, then two edge-value sets:
`zeros`, and `large` (magnitudes near the top of what the dtype's arithmetic
tolerates: 1e4 for float32/bfloat16, 1e8 for float64, 16 for float16, the extreme
values of 8- and 16-bit integers, +-1024 for wider integers). Integer inputs used
as indices get values in [0, bound) instead (see signature.py).

Outputs are pre-filled before every run: NaN for floats, the dtype's minimum for
signed integers and maximum for unsigned ones (`FILL`). A second, different fill
(`ALT_FILL`) confirms that a surviving fill really was never written.
"""

from __future__ import annotations

import numpy as np

VERIFIER_VERSION = 1

_LARGE_FLOAT = {"float64": 1e8, "float32": 1e4, "bfloat16": 1e4, "float16": 16.0}


def np_dtype(dtype: str):
    if dtype == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if dtype == "bool":
        return np.dtype(np.bool_)
    return np.dtype(dtype)


def is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def fill_value(dtype: str, alternative: bool = False):
    """The value written into outputs before a run (see the module docstring)."""
    if is_float(dtype):
        return {"float16": -1234.0, "bfloat16": -12288.0}.get(dtype, -12345.0) if alternative else np.nan
    if dtype == "bool":
        return not alternative
    info = np.iinfo(np_dtype(dtype))
    if info.min < 0:
        return info.max if alternative else info.min
    return int(0xA5A5A5A5A5A5A5A5 & info.max) if alternative else info.max


def filled(shape, dtype: str, alternative: bool = False) -> np.ndarray:
    return np.full(shape, fill_value(dtype, alternative), dtype=np_dtype(dtype))


def set_names(n_random: int) -> list:
    return [f"random{i}" for i in range(n_random)] + ["zeros", "large"]


def input_sets(args, base_seed: int, n_random: int, only=None) -> list:
    """[(set name, {arg name: array})] for the arguments the kernel reads (inputs and in-outs);
    with ONLY (set numbers), just those sets: each set has its own seed, so a set is the same
    whichever others are made."""
    sets = []
    for i, name in enumerate(set_names(n_random)):
        if only is not None and i not in only:
            continue
        rng = np.random.default_rng([base_seed, i])
        values = {}
        for arg in args:
            if arg.role == "output":
                continue
            values[arg.name] = _values(arg, name, rng)
        sets.append((name, values))
    return sets


def _values(arg, set_name: str, rng) -> np.ndarray:
    shape, dtype = tuple(arg.shape), arg.dtype
    target = np_dtype(dtype)
    if set_name == "zeros":
        return np.zeros(shape, dtype=target)
    large = set_name == "large"
    if arg.index_bound is not None:
        if large:
            return np.full(shape, arg.index_bound - 1, dtype=target)
        return rng.integers(0, arg.index_bound, size=shape).astype(target)
    if dtype == "bool":
        return np.ones(shape, dtype=target) if large else rng.integers(0, 2, size=shape).astype(target)
    if is_float(dtype):
        if large:
            sign = rng.choice(np.array([-1.0, 1.0]), size=shape)
            return (sign * rng.uniform(0.5, 1.0, size=shape) * _LARGE_FLOAT.get(dtype, 1e4)).astype(target)
        return rng.uniform(-1.0, 1.0, size=shape).astype(target)
    info = np.iinfo(target)
    if info.bits <= 16:
        if large:
            return rng.choice(np.array([info.min, info.max], dtype=np.int64), size=shape).astype(target)
        return rng.integers(info.min, int(info.max) + 1, size=shape).astype(target)
    lo, hi = (-1024, 1025) if info.min < 0 else (0, 1025)
    if large:
        if info.min < 0:
            return rng.choice(np.array([-1024, 1024], dtype=np.int64), size=shape).astype(target)
        return np.full(shape, 1024, dtype=target)
    return rng.integers(lo // 8, hi // 8, size=shape).astype(target)

"""The reduction operators of today's models besides norms and softmaxes (global average pooling, a
mean over tokens, logsumexp, a per-token absmax, a row's sum of squares, a bias gradient): each
builds the computation numpy spells, and dlight schedules it for a GPU within the compile check."""

from __future__ import annotations

import numpy as np
import pytest

from dragon_dsl.corpus.families import ALL_FAMILIES
from dragon_dsl.corpus.generator import WorkloadSpec


def _gap(x, layout):
    return x.astype("float64").mean(axis=(2, 3) if layout == "NCHW" else (1, 2))


CASES = [  # family, parameters, numpy of the input
    (
        "global_avg_pool",
        {"n": 2, "c": 16, "h": 7, "w": 7, "layout": "NCHW", "dtype": "float32"},
        lambda x: _gap(x, "NCHW"),
    ),
    (
        "global_avg_pool",
        {"n": 1, "c": 24, "h": 14, "w": 14, "layout": "NHWC", "dtype": "float16"},
        lambda x: _gap(x, "NHWC"),
    ),
    (
        "mean_pool_tokens",
        {"batch": 3, "tokens": 16, "hidden": 64, "dtype": "float32"},
        lambda x: x.astype("float64").mean(axis=1),
    ),
    (
        "mean_pool_tokens",
        {"batch": 2, "tokens": 32, "hidden": 384, "dtype": "float16"},
        lambda x: x.astype("float64").mean(axis=1),
    ),
    (
        "logsumexp",
        {"rows": 4, "cols": 1000, "dtype": "float32"},
        lambda x: np.log(np.exp(x.astype("float64")).sum(axis=1)),
    ),
    (
        "logsumexp",
        {"rows": 2, "cols": 768, "dtype": "float16"},
        lambda x: np.log(np.exp(x.astype("float64")).sum(axis=1)),
    ),
    ("row_absmax", {"rows": 8, "cols": 4096, "dtype": "float16"}, lambda x: np.abs(x.astype("float64")).max(axis=1)),
    ("row_absmax", {"rows": 3, "cols": 1000, "dtype": "float32"}, lambda x: np.abs(x.astype("float64")).max(axis=1)),
    ("sum_of_squares", {"rows": 4, "cols": 768, "dtype": "float32"}, lambda x: (x.astype("float64") ** 2).sum(axis=1)),
    ("sum_of_squares", {"rows": 2, "cols": 1024, "dtype": "float16"}, lambda x: (x.astype("float64") ** 2).sum(axis=1)),
    ("bias_grad", {"tokens": 64, "features": 96, "dtype": "float16"}, lambda x: x.astype("float64").sum(axis=0)),
    ("bias_grad", {"tokens": 128, "features": 40, "dtype": "float32"}, lambda x: x.astype("float64").sum(axis=0)),
]


def _module(family, params):
    return WorkloadSpec(family, tuple(sorted(params.items()))).build()


@pytest.mark.parametrize("family,params,expected", CASES, ids=[f"{c[0]}-{c[1]['dtype']}" for c in CASES])
def test_the_operator_computes_what_numpy_does(family, params, expected):
    import tvm

    x_t, y_t = ALL_FAMILIES[family].build(**params)
    lib = tvm.compile(_module(family, params), "llvm")
    x = np.random.default_rng(0).uniform(-2, 2, [int(d) for d in x_t.shape]).astype(params["dtype"])
    y = tvm.runtime.empty([int(d) for d in y_t.shape], str(y_t.dtype))
    lib["main"](tvm.runtime.tensor(x), y)
    tol = 1e-2 if params["dtype"] == "float16" else 1e-5
    np.testing.assert_allclose(y.numpy().astype("float64"), expected(x), rtol=tol, atol=tol)


@pytest.mark.parametrize("family,params,expected", CASES[::2], ids=[c[0] for c in CASES[::2]])
def test_dlight_schedules_it_within_the_compile_check(family, params, expected):
    from dragon_dsl.engine import resolve_target
    from dragon_dsl.tvm.compile import check_scheduled, schedule
    from dragon_dsl.tvm.target import tvm_target

    target = tvm_target(resolve_target("cuda").spec)
    check_scheduled(schedule(_module(family, params), {"baseline": "dlight"}, target), target)


def test_the_samplers_draw_buildable_real_shapes():
    import random

    rng = random.Random(0)
    for name in ("global_avg_pool", "mean_pool_tokens", "logsumexp", "row_absmax", "sum_of_squares", "bias_grad"):
        family = ALL_FAMILIES[name]
        for _ in range(5):
            params = family.sample(rng)
            assert params["dtype"] in ("float16", "float32")
            assert family.build(**params)[-1].name == "Y"

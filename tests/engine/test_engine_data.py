"""The engine's plain data and arithmetic: results, keys, targets, the cache's rules,
input sets, comparison. No worker processes."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dragon_dsl.engine import Result, Status, Task, geomean, speedup
from dragon_dsl.engine.cache import ResultsCache, answers
from dragon_dsl.engine.compare import RTOL, Expected, compare
from dragon_dsl.engine.inputs import fill_value, filled, input_sets, set_names
from dragon_dsl.engine.keys import trace_hash
from dragon_dsl.engine.signature import Arg
from dragon_dsl.engine.targets import parse_device, resolve_target
from dragon_dsl.engine.timing import median
from dragon_dsl.tvm.compile import CHECKS_VERSION


def test_result_json_round_trip_keeps_infinities():
    r = Result(Status.NUMERIC_MISMATCH, "x", max_abs_err=math.inf, max_rel_err=math.inf, n_checked=2, level="verify")
    data = r.to_json()
    assert data["status"] == "numeric_mismatch" and data["max_abs_err"] == "inf"
    back = Result.from_json(data)
    assert back == r and back.status is Status.NUMERIC_MISMATCH


def test_trace_hash_is_canonical_json():
    a = [[["Split", ["l0", "None", 4], [True, False], ["l1", "l2"]]], []]
    assert trace_hash(a) == trace_hash([[["Split", ["l0", "None", 4], [True, False], ["l1", "l2"]]], []])
    assert trace_hash(a) != trace_hash([[["Split", ["l0", "None", 8], [True, False], ["l1", "l2"]]], []])
    assert trace_hash({"a": 1, "b": 2}) == trace_hash({"b": 2, "a": 1})


def test_llvm_means_this_machines_cpu_as_llvm_names_it():
    """`"llvm"` builds for the CPU it runs on (its vector units), as LLVM itself detects it."""
    from tvm.target import codegen

    cpu = str(codegen.llvm_get_system_cpu())
    expected = {"kind": "llvm", "num-cores": os.cpu_count()}
    assert resolve_target("llvm").spec == (expected if cpu == "generic" else dict(expected, mcpu=cpu))


def test_targets_and_devices():
    assert resolve_target({"kind": "llvm", "num-cores": 2}).key == '{"kind":"llvm","num-cores":2}'
    h100 = resolve_target("nvidia/nvidia-h100")
    assert h100.is_gpu and h100.device_type == "cuda" and h100.key == '"nvidia/nvidia-h100"'
    with pytest.raises(ValueError):
        resolve_target("cuda -arch=sm_90")
    remote = parse_device("rpc://127.0.0.1:9190/h200")
    assert (remote.host, remote.port, remote.key, remote.is_remote) == ("127.0.0.1", 9190, "h200", True)
    assert not parse_device("local").is_remote
    with pytest.raises(ValueError):
        parse_device("rpc://nohost/key")


def test_task_rejects_unknown_levels():
    with pytest.raises(ValueError):
        Task("w", [], level="fast")


def test_cache_answer_rules():
    checks = {"seeds": 3, "checks": CHECKS_VERSION}
    ok_verify = Result(Status.OK, level="verify")
    assert answers(ok_verify, checks, Task("w", [], level="verify", seeds=3))
    assert answers(ok_verify, checks, Task("w", [], level="build"))
    assert not answers(ok_verify, checks, Task("w", [], level="verify", seeds=5))
    assert not answers(ok_verify, checks, Task("w", [], level="time"))
    timed = Result(Status.OK, level="time", latency_us=1.0)
    config = {**checks, **Task("w", []).timing_config()}
    assert answers(timed, config, Task("w", [], level="time"))
    assert not answers(timed, config, Task("w", [], level="time", flush_l2=True))
    # a success under earlier compile checks (or before they had a version) is built again: a newer
    # check may reject it; a failure stays one
    assert not answers(timed, {**config, "checks": CHECKS_VERSION - 1}, Task("w", [], level="time"))
    assert not answers(ok_verify, {"seeds": 3}, Task("w", [], level="build"))
    build_error = Result(Status.BUILD_ERROR, level="build")
    assert answers(build_error, {}, Task("w", [], level="time"))
    mismatch = Result(Status.NUMERIC_MISMATCH, level="verify")
    assert answers(mismatch, {"seeds": 3}, Task("w", [], level="time", seeds=9))
    assert not answers(mismatch, {"seeds": 3}, Task("w", [], level="build"))


def test_cache_store_lookup_and_references(tmp_path):
    cache = ResultsCache(tmp_path / "r.sqlite")
    task = Task("w", [], level="verify")
    assert cache.lookup("wk", "th", "t", "local", task) is None
    cache.store("wk", "th", "t", "local", task, Result(Status.OK, n_checked=5, level="verify"))
    hit = cache.lookup("wk", "th", "t", "local", task)
    assert hit.cached and hit.n_checked == 5
    assert cache.lookup("wk", "th", "t", "rpc://h:1/k", task) is None
    assert cache.put_reference("wk", "cfg", b"npz")
    assert cache.get_reference("wk", "cfg") == b"npz" and cache.get_reference("wk", "other") is None
    cache.MAX_REFERENCE_BYTES = 8  # over the blob limit (SQLite would refuse a huge blob): a file of its own
    assert cache.put_reference("wk", "big", b"123456789")
    assert cache.get_reference("wk", "big") == b"123456789" and cache.get_reference("wk", "bigger") is None
    assert cache.reference_file("wk", "big").parent == tmp_path / "r-refs"
    assert not list((tmp_path / "r-refs").glob("*.tmp"))
    cache.close()
    again = ResultsCache(tmp_path / "r.sqlite")
    assert again.count() == 1 and again.get_reference("wk", "big") == b"123456789"  # kept across runs
    again.close()


def test_a_reference_in_parts_is_kept_in_parts_when_large(tmp_path):
    """A reference the build workers computed in parts goes into the database merged when it is
    small, and is kept as a copy of its folder of parts when it is large: nothing reads its
    arrays to store it, and the engine reads it where it is kept."""
    import numpy as np

    from dragon_dsl.engine import reference
    from dragon_dsl.engine.signature import Arg

    args = [Arg("A", (4,), "float32", "input"), Arg("B", (4,), "float32", "output")]
    parts = tmp_path / "parts"
    parts.mkdir()
    for i, name in enumerate(["random0", "random1", "zeros"]):
        part = reference.Reference(args, [(name, {"A": np.full(4, i, "float32")}, {"B": np.full(4, 2 * i, "float32")})])
        reference.save(part, parts / f"part{i}.npz")
    merged = reference.to_bytes(reference.load(parts))
    cache = ResultsCache(tmp_path / "r.sqlite")
    assert cache.put_reference_parts("wk", "small", parts)
    assert cache.reference_path("wk", "small") is None and cache.get_reference("wk", "small") == merged
    cache.MAX_REFERENCE_BYTES = 8
    assert cache.put_reference_parts("wk", "big", parts)
    kept = cache.reference_path("wk", "big")
    assert kept.is_dir() and sorted(f.name for f in kept.iterdir()) == ["part0.npz", "part1.npz", "part2.npz"]
    assert all((kept / f.name).read_bytes() == f.read_bytes() for f in parts.iterdir())
    assert cache.get_reference("wk", "big") == merged
    assert cache.put_reference_parts("wk", "big", parts)  # kept already: stays as it is
    assert not list(kept.parent.glob("*.tmp"))
    assert cache.reference_path("wk", "other") is None and cache.get_reference("wk", "other") is None
    one = tmp_path / "one"  # a reference computed in one part is kept as that file
    one.mkdir()
    (one / "part0.npz").write_bytes((parts / "part0.npz").read_bytes())
    assert cache.put_reference_parts("wk", "one", one)
    assert cache.reference_path("wk", "one") == cache.reference_file("wk", "one")
    assert cache.get_reference("wk", "one") == (parts / "part0.npz").read_bytes()
    cache.close()


ARGS = [
    Arg("A", (4, 8), "float32", "input"),
    Arg("I", (16,), "int32", "input", index_bound=4),
    Arg("Q", (8,), "int8", "input"),
    Arg("C", (4, 8), "float32", "output"),
]


def test_input_sets_are_seeded_and_cover_edges():
    sets = input_sets(ARGS, 1234, 3)
    assert [name for name, _ in sets] == set_names(3) == ["random0", "random1", "random2", "zeros", "large"]
    again = input_sets(ARGS, 1234, 3)
    assert all(np.array_equal(sets[0][1][k], again[0][1][k]) for k in ("A", "I", "Q"))
    assert not np.array_equal(sets[0][1]["A"], input_sets(ARGS, 1235, 3)[0][1]["A"])
    assert "C" not in sets[0][1]
    for _, values in sets:
        assert values["I"].min() >= 0 and values["I"].max() < 4
    zeros, large = dict(sets)["zeros"], dict(sets)["large"]
    assert not zeros["A"].any()
    assert np.abs(large["A"]).min() >= 5e3 and set(np.unique(large["Q"])) <= {-128, 127}
    assert large["I"].max() == 3
    # a reference part makes only its sets, and they are the sets the whole list holds
    for only in ([0], [2, 4], []):
        part = input_sets(ARGS, 1234, 3, only)
        assert [name for name, _ in part] == [sets[i][0] for i in only]
        assert all(np.array_equal(v, sets[i][1][k]) for i, (_, values) in zip(only, part) for k, v in values.items())


def test_fills_are_nan_or_sentinels():
    assert np.isnan(filled((2,), "float32")).all()
    assert fill_value("int32") == -(2**31) and fill_value("uint8") == 255
    assert fill_value("float16", alternative=True) != fill_value("float32", alternative=True)


def test_compare_tolerance_depends_on_dtype():
    want = np.linspace(-2, 2, 64)
    off = want + 1e-3
    assert compare(off.astype(np.float16), want.astype(np.float16), "float16").bad == 0
    assert compare(off.astype(np.float32), want.astype(np.float32), "float32").bad > 0
    assert compare((want + 1e-6).astype(np.float32), want.astype(np.float32), "float32").bad == 0
    ints = np.arange(8, dtype=np.int32)
    assert compare(ints + np.eye(1, 8, 3, dtype=np.int32)[0], ints, "int32").bad == 1


def test_compare_finds_surviving_fills_and_wrong_infinities():
    want = np.ones(8, np.float32)
    got = want.copy()
    got[5:] = np.nan
    verdict = compare(got, want, "float32")
    assert verdict.n_unwritten == 3 and verdict.bad == 0
    got = want.copy()
    got[0] = np.inf
    assert compare(got, want, "float32").bad == 1
    ref_nan = want.copy()
    ref_nan[2] = np.nan
    assert compare(np.ones(8, np.float32), ref_nan, "float32").bad == 0  # NaN in the reference: anything goes
    sentinel = np.full(4, fill_value("int32"), np.int32)
    assert compare(sentinel, np.zeros(4, np.int32), "int32").n_unwritten == 4


def _verdict_key(v):
    return (v.bad, v.n_unwritten, v.total)


@settings(max_examples=300, deadline=None)
@given(
    dtype=st.sampled_from(["float32", "float16"]),
    n=st.integers(1, 40),
    seed=st.integers(0, 2**31 - 1),
    scale=st.sampled_from([0.0, 1e-3, 1.0, 1e4, 1e-27, 1e-33, 1e36, 1e38]),
    near=st.sampled_from([0.0, 0.5, 0.999, 0.999999, 1.0, 1.000001, 1.001, 2.0]),
    specials=st.sampled_from(["none", "nan_got", "nan_want", "inf_got", "inf_want"]),
)
def test_fast_comparison_gives_the_exact_rules_verdict(dtype, n, seed, scale, near, specials):
    """Expected.compare (float32, precomputed) decides exactly as compare (float64), including
    values placed right at the tolerance, NaNs and infinities, and scales where float32 tolerances
    would be subnormal or overflow (float16 values of 1e38 are infinities)."""
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore", invalid="ignore"):
        want = (rng.uniform(-1, 1, n) * scale).astype(dtype)
        w64 = want.astype(np.float64)
        finite = w64[np.isfinite(w64)]
        finite_max = float(np.max(np.abs(finite))) if finite.size else 0.0
        tol = RTOL[dtype] * ((finite_max if finite_max > 0 else 1.0) + np.abs(w64))
        sign = rng.choice([-1.0, 1.0], n)
        got = (w64 + sign * tol * near * rng.uniform(0.5, 1.0, n) ** (near > 1.0)).astype(dtype)
    if specials == "nan_got":
        got[rng.integers(n)] = np.nan
    elif specials == "nan_want":
        want[rng.integers(n)] = np.nan
    elif specials == "inf_got":
        got[rng.integers(n)] = np.inf
    elif specials == "inf_want":
        i = rng.integers(n)
        want[i] = got[i] = np.inf
    exact = compare(got, want, dtype)
    fast = Expected(want, dtype).compare(got)
    assert _verdict_key(fast) == _verdict_key(exact)
    if not exact.bad and not exact.n_unwritten:
        assert fast.max_abs == pytest.approx(exact.max_abs, rel=1e-5, abs=1e-30)


@settings(max_examples=400, deadline=None)
@given(
    exponent=st.sampled_from([-44, -40, -36, -33, -27, -3, 0, 4, 30, 36, 37, 38]),
    mantissas=st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=1, max_size=6),
    at=st.integers(0, 5),
    steps=st.integers(-3, 3),
)
def test_fast_comparison_at_the_tolerance_in_float32_units(exponent, mantissas, at, steps):
    """A float32 output a few units in the last place from the tolerance, at every scale a float32
    holds (subnormal tolerances, sums near overflow): the precomputed float32 path and the float64
    rule give the same verdict."""
    with np.errstate(over="ignore", invalid="ignore"):
        want = (np.array(mantissas) * 10.0**exponent).astype(np.float32)
        w64 = want.astype(np.float64)
        scale = float(np.max(np.abs(w64))) or 1.0
        got = want.copy()
        i = at % want.size
        edge = np.float32(w64[i] + RTOL["float32"] * (scale + abs(w64[i])))
        for _ in range(abs(steps)):
            edge = np.nextafter(edge, np.float32(np.inf if steps > 0 else -np.inf), dtype=np.float32)
        got[i] = edge
    assert _verdict_key(Expected(want, "float32").compare(got)) == _verdict_key(compare(got, want, "float32"))


def test_fast_comparison_keeps_its_margin():
    """A float32 output just past the tolerance where the tolerance computed in float32 without the
    margin rounds up past it (found by a search over a million values): the exact rule fails it,
    and so must the fast path."""
    want = np.array([0.003816680982708931, 1.0], np.float32)
    got = np.array([0.003917062655091286, 1.0], np.float32)
    assert compare(got, want, "float32").bad == 1
    assert Expected(want, "float32").compare(got).bad == 1


def test_staged_inputs_are_uploaded_once_and_outputs_refilled():
    import tvm

    from dragon_dsl.engine.reference import Reference
    from dragon_dsl.engine.run import Staged, verify, verify_staged

    args = [Arg("A", (4,), "float32", "input"), Arg("B", (4,), "float32", "output")]
    sets = [(name, values, {"B": values["A"] * 2}) for name, values in input_sets(args, 7, 3)]
    ref = Reference(args, sets)
    staged = Staged(tvm.cpu(0), ref)
    first = staged.tensors(0)
    first[1].copyfrom(np.ones(4, np.float32))
    again = staged.tensors(0)
    assert again[0] is first[0]  # the input stays on the device
    assert np.isnan(again[1].numpy()).all()  # the output got its fill again

    def double(a, b):
        b.copyfrom(a.numpy() * 2)

    def double_and_damage(a, b):
        double(a, b)
        a.copyfrom(np.full(4, 99.0, np.float32))  # writes where it must not: into its input

    assert verify(double_and_damage, staged)["status"] == "ok"
    assert verify(double, staged)["status"] == "numeric_mismatch"  # the damaged staging misleads
    fresh = []

    def restage():
        fresh.append(Staged(tvm.cpu(0), ref))
        return fresh[-1]

    reply, used = verify_staged(double, staged, restage)
    assert reply["status"] == "ok" and reply["verified_again"] and used is fresh[0]

    def writes_nan(a, b):
        b.copyfrom(np.where(np.arange(4) < 2, a.numpy() * 2, np.nan).astype(np.float32))

    def writes_half(a, b):
        b.copyfrom(np.where(np.arange(4) < 2, a.numpy() * 2, b.numpy()).astype(np.float32))

    assert verify(writes_nan, Staged(tvm.cpu(0), ref))["status"] == "numeric_mismatch"
    assert verify(writes_half, Staged(tvm.cpu(0), ref))["status"] == "unwritten_output"


def test_speedup_helpers():
    assert speedup(Result(Status.OK, latency_us=10.0), Result(Status.OK, latency_us=5.0)) == 2.0
    assert speedup(Result(Status.OK), Result(Status.OK, latency_us=5.0)) is None
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert median([3.0, 1.0, 2.0]) == 2.0 and median([4.0, 1.0]) == 2.5


def test_importing_the_engine_does_not_import_tvm():
    import subprocess
    import sys

    code = (
        "import sys, dragon_dsl.engine; from dragon_dsl.engine import Result, Status, Task; "
        "sys.exit(1 if 'tvm' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_a_folder_of_reference_parts_loads_in_part_order(tmp_path):
    """The engine keeps a reference computed in parts as the build workers' folder of parts:
    part0.npz, part1.npz, ... hold consecutive input sets (numbered, so part10 comes after part9)."""
    from dragon_dsl.engine.reference import Reference, load, save

    args = [Arg("A", (2,), "float32", "input"), Arg("B", (2,), "float32", "output")]
    sets = [(name, values, {"B": values["A"]}) for name, values in input_sets(args, 3, 10)]
    for index, one in enumerate(sets):
        save(Reference(args, [one]), tmp_path / f"part{index}.npz")
    got = load(tmp_path)
    assert [s[0] for s in got.sets] == [s[0] for s in sets] == set_names(10)
    assert all(np.array_equal(g[2]["B"], s[1]["A"]) for g, s in zip(got.sets, sets))
    save(got, tmp_path / "whole.npz")
    assert [s[0] for s in load(tmp_path / "whole.npz").sets] == set_names(10)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no part"):
        load(tmp_path / "empty")


def _hold_gpu(lock_dir, index, stamps, seconds):
    import os
    import time

    os.environ["DRAGON_GPU_LOCK_DIR"] = lock_dir
    from dragon_dsl.engine.devices import gpu_lock

    with gpu_lock(index):
        start = time.monotonic()
        time.sleep(seconds)
        stamps.put((start, time.monotonic()))


def test_gpu_lock_lets_one_process_at_a_time_use_a_gpu(tmp_path, monkeypatch):
    """Engines in several processes take turns on one physical GPU; other GPUs stay free."""
    import multiprocessing

    from dragon_dsl.engine.devices import physical_gpu

    ctx = multiprocessing.get_context("spawn")
    stamps = ctx.Queue()
    procs = [ctx.Process(target=_hold_gpu, args=(str(tmp_path), 0, stamps, 0.3)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    spans = sorted(stamps.get(timeout=5) for _ in procs)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # no two held at once
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert physical_gpu(0) == "3" and physical_gpu(1) == "1"  # the lock names the real GPU


def test_a_worker_that_cannot_start_shows_the_end_of_its_log(tmp_path):
    from dragon_dsl.engine.pool import _log_tail

    log = tmp_path / "build-0.log"
    log.write_text("\n".join(f"line {i}" for i in range(20)) + "\nRuntimeError: no main guard\n")
    tail = _log_tail(log)
    assert "RuntimeError: no main guard" in tail and "line 19" in tail and "line 10" not in tail
    assert _log_tail(tmp_path / "missing.log") == ""


def test_nan_written_where_the_reference_has_a_number_is_named():
    """A kernel that writes NaN (seen: a racy parallel max in softmax, on the large-values input
    set) first looks like one that left its pre-filled NaN; the second fill shows it wrote it: the
    report says NaN, with an infinite error, not "max abs err 0"."""
    import numpy as np
    import tvm

    from dragon_dsl.engine.reference import Reference
    from dragon_dsl.engine.run import Staged, verify
    from dragon_dsl.engine.signature import Arg

    a = np.arange(8, dtype="float32")
    ref = Reference(
        [Arg("A", (8,), "float32", "input"), Arg("B", (8,), "float32", "output")], [("large", {"A": a}, {"B": a + 1})]
    )

    def kernel(src, dst):
        out = src.numpy() + 1
        out[:3] = np.nan
        dst.copyfrom(out)

    reply = verify(kernel, Staged(tvm.cpu(), ref))
    assert reply["status"] == "numeric_mismatch"
    assert reply["message"] == (
        "output B, input set large: 3 of 8 values differ from the reference "
        "(max abs err inf, max rel err inf; 3 of them NaN where the reference has a number)"
    )
    assert reply["max_abs_err"] == float("inf")

"""`tvm.compile.thread_binding_problems` (the compile check of the engine's builds): GPU schedules TVM 0.27 compiles but cannot run correctly.

The cases are data (data/binding/*.tvmscript, each with its `# expect:` line): a block left
on the host (a segfault on the H200: the host function reads GPU memory), an inner thread loop
longer than the same axis' outer loop (iterations that never run), and the legal patterns
that look alike (MetaSchedule's cooperative fetch, a bound loop of extent 1). Every verified
script of the shipped CUDA corpus must pass the check (a seeded sample here; all 784 passed
when the check was written).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from dragon_dsl.tvm.compile import BuildError, check_gpu, host_blocks, mixed_loops, schedule, thread_binding_problems
from dragon_dsl.tvm.workload import load_workload

from .engine_helpers import DATA, H100, ROOT

CASES = sorted((DATA / "binding").glob("*.tvmscript"))
CORPUS = ROOT / "data" / "corpus" / "cuda" / "data"


def _expected(path: Path) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name}: the first line must be '# expect: ...'"
    return first[len("# expect: ") :].strip()


def test_there_are_cases():
    assert len(CASES) >= 5


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path):
    expected = _expected(path)
    problems = thread_binding_problems(load_workload(str(path)))
    if expected == "ok":
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0][1].startswith(expected), problems


@pytest.mark.parametrize(
    "case, names",
    [
        ("unbound_pad", ["pad"]),
        ("nothing_bound", None),  # every root-level nest: checked against the module below
        ("cooperative_fetch", []),
        ("two_extents", []),
    ],
)
def test_host_blocks_names_what_would_run_on_the_host(case, names):
    """`host_blocks` (what dragon_model.complete binds): the HOST_BLOCK findings' blocks, also where
    no loop is bound at all (which thread_binding_problems leaves to check_gpu's own message)."""
    mod = load_workload(str(DATA / "binding" / f"{case}.tvmscript"))
    found = host_blocks(mod)
    if names is None:
        assert found and thread_binding_problems(mod) == []
    else:
        assert found == names


def test_check_gpu_reports_the_block_left_on_the_host():
    import tvm

    mod = load_workload(str(DATA / "binding" / "unbound_pad.tvmscript"))
    with pytest.raises(BuildError, match=r"block 'pad' is under no loop bound"):
        check_gpu(mod, tvm.target.Target(H100))


def test_check_gpu_still_names_a_module_without_any_kernel():
    import tvm

    mod = load_workload(str(DATA / "binding" / "nothing_bound.tvmscript"))
    with pytest.raises(BuildError, match="no GPU kernel was generated"):
        check_gpu(mod, tvm.target.Target(H100))


def test_verified_cuda_corpus_scripts_pass():
    import datasets
    import tvm

    rows = [r for f in sorted(CORPUS.glob("*.parquet")) for r in datasets.Dataset.from_parquet(str(f))]
    assert len(rows) > 700
    target = tvm.target.Target(H100)
    sample = random.Random(7).sample(rows, 24)
    for r in sample:
        mod = tvm.script.from_source(r["workload_text"])
        scheduled = schedule(mod, {"trace": json.loads(r["trace"])}, target)
        assert thread_binding_problems(scheduled) == [] and mixed_loops(scheduled) == [], r["id"]

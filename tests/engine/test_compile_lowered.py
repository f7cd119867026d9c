"""A GPU candidate is lowered once: the build compiles the module its checks lowered
(`compile_scheduled(..., lowered)`), and that gives what `tvm.compile` gives from the scheduled
module: the same CUDA source and the same host code, for a schedule of every CUDA corpus family."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dragon_dsl.tvm.compile import checked_schedule, compile_scheduled

ROOT = Path(__file__).resolve().parents[2]


def one_schedule_per_family() -> list:
    import pyarrow.parquet as pq

    seen: dict = {}
    for file in sorted((ROOT / "data" / "corpus" / "cuda" / "data").glob("*.parquet")):
        for row in pq.read_table(str(file), columns=["family", "workload_text", "trace"]).to_pylist():
            seen.setdefault(row["family"], (row["workload_text"], json.loads(row["trace"])))
    return sorted(seen.items())


CASES = one_schedule_per_family()


def sources(executable) -> tuple:
    device = [m.inspect_source() for m in executable.mod.imports if m.kind == "cuda"]
    return executable.mod.inspect_source("ll"), device


def test_every_cuda_corpus_family_has_a_case():
    assert len(CASES) >= 18, [family for family, _ in CASES]


@pytest.mark.parametrize("family,case", CASES, ids=[family for family, _ in CASES])
def test_lowered_once_compiles_to_what_tvm_compile_gives(family, case):
    import tvm

    from dragon_dsl.tvm.workload import load_workload

    text, trace = case
    target = tvm.target.Target("nvidia/nvidia-h100")
    phases: dict = {}
    scheduled = checked_schedule(load_workload(text), {"trace": trace}, target, phases)
    assert phases.get("lowered") is not None
    once = sources(compile_scheduled(scheduled, target, phases["lowered"]))
    twice = sources(tvm.compile(scheduled, target))
    assert once[1] and once[1] == twice[1], f"{family}: the CUDA source differs"
    assert once[0] == twice[0], f"{family}: the host code differs"


def test_a_cpu_target_compiles_as_tvm_compile_does():
    import tvm

    from dragon_dsl.tvm.workload import load_workload

    text, _ = CASES[0][1]
    mod = load_workload(text)
    target = tvm.target.Target("llvm")
    phases: dict = {}
    scheduled = checked_schedule(mod, {"baseline": "unscheduled"}, target, phases)
    assert "lowered" not in phases
    assert compile_scheduled(scheduled, target).mod.inspect_source("ll") == tvm.compile(
        scheduled, target
    ).mod.inspect_source("ll")

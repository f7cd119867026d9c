"""Labels without the queries whose results nothing uses (`data.without_unused_queries`,
`records --plain-labels`) schedule the workload exactly as the scripts they come from, and the
decoder can write them.

Data: the measured corpora (data/corpus/cuda, data/corpus/llvm: one answer per family) and the
held-out GEMM of tests/data/replay_prefix with dlight's script."""

from __future__ import annotations

from pathlib import Path

import pytest

from dragon_dsl import check_text
from dragon_model.data import body_of_text, without_unused_queries

ROOT = Path(__file__).resolve().parents[2]
GEMM = ROOT / "tests" / "data" / "replay_prefix" / "linear_dtypef16_epiloguenone_k4096_m128_n4096.tvmscript"


def one_answer_per_family() -> list:
    import pyarrow.parquet as pq

    seen: dict = {}
    for kind in ("cuda", "llvm"):
        for file in sorted((ROOT / "data" / "corpus" / kind / "data").glob("*.parquet")):
            for row in pq.read_table(str(file), columns=["family", "workload_text", "script"]).to_pylist():
                seen.setdefault((kind, row["family"]), (row["workload_text"], body_of_text(row["script"])))
    return sorted(seen.items())


CASES = one_answer_per_family()


def scheduled(body: str, workload_text: str):
    from dragon_dsl.tvm.replay import replay
    from dragon_dsl.tvm.workload import load_workload

    result = replay(check_text(body)[0], load_workload(workload_text))
    assert result.ok, body
    return result.schedule.mod


def test_the_cases_cover_both_corpora():
    assert {kind for (kind, _), _ in CASES} == {"cuda", "llvm"} and len(CASES) >= 30


@pytest.mark.parametrize("key,case", CASES, ids=[f"{k}-{f}" for (k, f), _ in CASES])
def test_the_schedule_is_the_same(key, case):
    import tvm_ffi

    workload_text, body = case
    plain = without_unused_queries(body)
    assert "DRG104" not in {d.code for d in check_text(plain)[1]}
    assert len(plain.splitlines()) <= len(body.splitlines())
    assert tvm_ffi.structural_equal(scheduled(plain, workload_text), scheduled(body, workload_text))


def test_dlights_gemm_loses_its_queries_and_the_decoder_can_write_it():
    import tvm_ffi

    from dragon_dsl.engine import resolve_target
    from dragon_model.api import dlight_script, generator
    from dragon_model.reachable import reachable

    text = GEMM.read_text(encoding="utf-8")
    body = body_of_text(dlight_script(text, resolve_target("cuda").spec, GEMM.name))
    plain = without_unused_queries(body)
    assert (len(body.splitlines()), len(plain.splitlines())) == (69, 58)
    assert "b67 = get_producers(b35)\ncompute_inline(b67)\n" in plain  # A's reindex block, named at once
    assert tvm_ffi.structural_equal(scheduled(plain, text), scheduled(body, text))
    reach = reachable(generator(None, "cuda"), text, "cuda", plain)
    assert reach.ok, reach

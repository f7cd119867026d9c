"""What the model is taught on a CPU target where the measured corpus' answer is slower than the
program as written: nothing (the row is left out). The llvm corpus' best of 8 MetaSchedule trials
is slower than the unscheduled program for about a quarter of its training rows (pool2d, depthwise
convolutions, permutes), up to 90,000x. Taught as an empty answer instead, they made the fine-tuned
model answer every held-out prompt with no schedule."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from dragon_model.data import EOS, TIMING_NOISE, examples, load_rows, script_body, slower_than_written

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_llvm_corpus_leaves_out_the_answers_slower_than_the_program():
    rows = load_rows(ROOT / "data" / "corpus" / "llvm", splits=["train"])
    slower = [r for r in rows if slower_than_written(r)]
    assert len(rows) > 600 and 100 < len(slower) < len(rows) / 2
    assert all(float(r["latency_us"]) > float(r["unscheduled_us"]) * TIMING_NOISE for r in slower)
    kept = [r for r in rows if r not in slower]
    sample = random.Random(0).sample(kept, 30)  # decoding a trace takes a while
    taught = examples(sample + slower[:10])
    assert [t["id"] for t in taught] == [r["id"] for r in sample]
    for r, t in zip(sample, taught):
        assert t["completion"] == script_body(r["trace"]) + EOS and t["completion"] != EOS


@pytest.mark.parametrize(
    "latency, unscheduled, slower",
    [
        (106.0, 100.0, True),  # past timing noise
        (104.0, 100.0, False),  # within it: the schedule stays
        (50.0, 100.0, False),
        (106.0, None, False),  # a GPU row: the program as written does not build there
        (None, 100.0, False),
        ("106.0", "100.0", True),  # as a JSON row may hold them
        ("n/a", 100.0, False),
    ],
)
def test_slower_than_written(latency, unscheduled, slower):
    assert slower_than_written({"latency_us": latency, "unscheduled_us": unscheduled}) is slower


def test_corpus_rows_beside_llvm_records_leave_out_the_same(tmp_path):
    """`records --corpus`: an llvm corpus' rows join the sft rows of llvm records (they were left out,
    as rows of another target than cuda), without the answers slower than the program as written."""
    import json

    from dragon_model.records import corpus_rows

    rows = load_rows(ROOT / "data" / "corpus" / "llvm", splits=["train"])
    pick = [next(r for r in rows if slower_than_written(r)), next(r for r in rows if not slower_than_written(r))]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pick))
    assert corpus_rows(tmp_path) == []  # a CUDA corpus is asked for by default
    (fast,) = corpus_rows(tmp_path, target_kind="llvm")
    assert fast["completion"] == script_body(pick[1]["trace"]) + EOS and fast["source"] == "corpus"

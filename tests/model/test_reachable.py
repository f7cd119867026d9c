"""The decoder can write what the model is trained on: dlight's CUDA scripts walk through the
decoder's grammar, limits and replay (`Generator.reachable`), and without the constants the labels
record (split shapes, query repeats) the same script is refused where it leaves the grammar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent.parent / "data" / "workloads"
TARGET = "nvidia/nvidia-h100"


def _dlight_row(workload: str) -> dict:
    from dragon_dsl import from_trace_json
    from dragon_dsl.tvm.dlight import dlight_trace
    from dragon_dsl.tvm.workload import load_workload

    text = (DATA / f"{workload}.tvmscript").read_text(encoding="utf-8")
    _rule, trace = dlight_trace(load_workload(text), TARGET)
    return {
        "id": workload,
        "family": workload,
        "task": "construction",
        "split": "train",
        "target": TARGET,
        "workload_text": text,
        "script": from_trace_json(trace),
        "trace": trace,
        "source": "dlight",
    }


@pytest.fixture(scope="module")
def matmul_row():
    return _dlight_row("matmul_64")


def test_dlight_matmul_is_reachable_with_its_own_constants_and_not_with_the_old_split_shapes(matmul_row):
    from dragon_model.data import grammar_facts
    from dragon_model.reachable import judge_rows, summary

    facts = grammar_facts([matmul_row], jobs=1)
    assert {"None,k,k,k", "k,k,None,k"} <= set(facts["literals"]["split_shapes"])  # dlight's tiles, its fetch
    assert facts["literals"]["query_repeats"] >= 2
    (verdict,) = judge_rows([matmul_row], "cuda", facts)
    assert verdict["ok"] and verdict["statements"] == verdict["total"] > 40, verdict

    # a grammar that offers constant splits of the shapes [None, k] and [None, k, j] only, one query once
    old = {
        **facts,
        "literals": {k: v for k, v in facts["literals"].items() if k not in ("split_shapes", "query_repeats")},
    }
    (refused,) = judge_rows([matmul_row], "cuda", old)
    assert not refused["ok"] and refused["why"].startswith("grammar"), refused
    assert refused["refused"].count(",") >= 4 and "split(" in refused["refused"]  # a 4-factor split
    got = summary([verdict, refused])
    assert got["rows"] == 2 and got["reachable"] == 1 and got["reasons"] == {"grammar": 1}


def test_the_command_judges_a_rows_file_and_names_a_missing_one(tmp_path, capsys):
    from dragon_model.reachable import main

    row = _dlight_row("ew_add_relu_128x64")
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert main([str(rows), "--target", "cuda", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["rows"] == 1 and out["summary"]["reachable"] == 1, out
    assert out["verdicts"][0]["id"] == "ew_add_relu_128x64"
    assert main([str(rows), "--target", "llvm"]) == 2
    assert "no rows for target llvm" in capsys.readouterr().err


def test_answers_are_judged_in_place_of_their_rows_labels(tmp_path, capsys):
    """`--answers`: what an evaluation's model wrote, walked through today's decoder checks; an
    answer the decoder refuses is named with its statement; one for no row, one without its keys
    and a file that is not JSON are errors naming the file and the position."""
    from dragon_model.reachable import main

    row = {**_dlight_row("ew_add_relu_128x64"), "workload": "ew_add_relu_128x64", "split": "test_family"}
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row) + "\n", encoding="utf-8")
    good, bad = row["script"], 'b0 = get_sblock("no_such_block")\n'

    def answers(name, *pairs):
        path = tmp_path / name
        path.write_text(
            json.dumps({"answers": [{"workload": w, "task": "construction", "script": s} for w, s in pairs]})
        )
        return str(path)

    args = [str(rows), "--target", "cuda", "--split", "test_family", "--json", "--answers"]
    assert main(args + [answers("good.json", ("ew_add_relu_128x64", good))]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["rows"] == out["summary"]["reachable"] == 1, out
    assert main(args + [answers("bad.json", ("ew_add_relu_128x64", bad))]) == 0
    (verdict,) = json.loads(capsys.readouterr().out)["verdicts"]
    assert not verdict["ok"] and verdict["statements"] == 0 and "no_such_block" in verdict["refused"], verdict
    assert main(args + [answers("other.json", ("no_such_workload", good))]) == 2
    assert "answer 1, for no_such_workload (construction), has no row" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"answers": [{"workload": "ew_add_relu_128x64"}]}))
    assert main(args + [str(broken)]) == 2
    assert 'broken.json: answer 1 has no "workload" and "script"' in capsys.readouterr().err
    broken.write_text("[1, 2")
    assert main(args + [str(broken)]) == 2
    assert "broken.json: Expecting ',' delimiter: line 1 column 6" in capsys.readouterr().err

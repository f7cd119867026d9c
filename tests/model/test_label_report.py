"""The labels' speed over dlight (`python -m dragon_model.label_report`): the fastest verified candidate
of each workload against dlight's script, from a results file; figures only where dlight was timed."""

from __future__ import annotations

import json

from dragon_model.label_report import label_speeds, main, summary
from dragon_model.records import candidate_id

HEADER = 'workload "w.tvmscript"\ntarget "nvidia/nvidia-h100"\n\n'


def _record(name: str, samples: list, dlight: str | None) -> dict:
    rec = {"name": name, "target": "nvidia/nvidia-h100", "scripts": [{"space": "cuda", "text": s} for s in samples]}
    if dlight:
        rec["dlight"] = {"rule": "Matmul", "text": dlight}
    return rec


def _measured(pairs: dict) -> dict:
    return {candidate_id(name, text): lat for (name, text), lat in pairs.items()}


def test_the_label_is_the_fastest_verified_and_dlight_the_baseline():
    a, b, d = (HEADER + f'b0 = get_sblock("{n}")\n' for n in "ABD")
    records = [_record("w1", [a, b], d), _record("w2", [a], d), _record("w3", [a], None), _record("w4", [a], d)]
    measured = _measured(
        {("w1", a): 10.0, ("w1", b): None, ("w1", d): 20.0, ("w2", a): 40.0, ("w2", d): 20.0, ("w3", a): 5.0}
    )
    rows = label_speeds(records, measured)
    assert [(r["name"], r["source"], r["label_us"], r["dlight_us"]) for r in rows] == [
        ("w1", "cuda", 10.0, 20.0),
        ("w2", "dlight", 20.0, 20.0),
        ("w3", "cuda", 5.0, None),
    ]
    figures = summary(rows)
    assert figures["workloads"] == 3 and figures["with_dlight"] == 2 and figures["label_is_dlight"] == 1
    assert figures["geomean_over_dlight"] == round(2.0**0.5, 3) and figures["share_at_least_dlight"] == 1.0


def test_a_missing_file_is_an_error_naming_it(tmp_path, capsys):
    assert main([str(tmp_path / "nope"), "--measured", str(tmp_path / "r.jsonl")]) == 2
    assert "nope: no such file" in capsys.readouterr().err


def test_the_command_reads_records_and_results(tmp_path, capsys):
    a, d = (HEADER + f'b0 = get_sblock("{n}")\n' for n in "AD")
    (tmp_path / "pre" / "records").mkdir(parents=True)
    (tmp_path / "pre" / "records" / "w1.json").write_text(json.dumps(_record("w1", [a], d)), encoding="utf-8")
    results = tmp_path / "r.jsonl"
    rows = [{"id": candidate_id("w1", a), "status": "ok", "latency_us": 5.0}]
    rows.append({"id": candidate_id("w1", d), "status": "ok", "latency_us": 15.0})
    results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main([str(tmp_path / "pre"), "--measured", str(results), "--json", str(tmp_path / "out.json")]) == 0
    assert json.loads(capsys.readouterr().out)["geomean_over_dlight"] == 3.0
    assert json.loads((tmp_path / "out.json").read_text())["rows"][0]["source"] == "cuda"


def test_on_a_cpu_the_baseline_is_the_program_as_written():
    """An llvm record's batch times the program as written (its header alone); the labels' speed is
    given over it, a label that is the program itself counting 1.0x."""
    header = 'workload "w.tvmscript"\ntarget {"kind": "llvm", "num-cores": 2}\n\n'
    a, b = (header + f'b0 = get_sblock("{n}")\n' for n in "AB")
    records = [
        {"name": n, "target": {"kind": "llvm", "num-cores": 2}, "scripts": [{"space": "llvm", "text": s}]}
        for n, s in (("w1", a), ("w2", b))
    ]
    measured = _measured({("w1", a): 10.0, ("w1", header): 40.0, ("w2", b): 30.0, ("w2", header): 20.0})
    rows = label_speeds(records, measured)
    assert [(r["source"], r["unscheduled_us"]) for r in rows] == [("llvm", 40.0), ("unscheduled", 20.0)]
    figures = summary(rows)
    assert figures["with_dlight"] == 0 and "geomean_over_dlight" not in figures
    assert figures["with_unscheduled"] == 2 and figures["geomean_over_unscheduled"] == 2.0
    assert figures["median_over_unscheduled"] == 2.5 and figures["share_at_least_2x_over_unscheduled"] == 0.5

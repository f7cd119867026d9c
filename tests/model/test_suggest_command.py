"""`dragon suggest` as a user runs it: what it prints is one script that `dragon-check` accepts;
bad inputs are refused before the model loads, with exit 2 and a clear message."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"
WL = DATA / "workloads" / "matmul_64.tvmscript"


def test_the_printed_suggestion_is_one_script_dragon_check_accepts(toy_model, capsys, tmp_path):
    from dragon_dsl.cli.check import main as check_main
    from dragon_dsl.cli.main import main

    rc = main(["suggest", str(WL), "--model", str(toy_model), "-k", "1", "--search-trials", "2"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert out.count("workload ") == 1, "one script: the explanation graph is inside it, not a second copy"
    script = tmp_path / "suggestion.dragon"
    script.write_text(out)
    assert check_main([str(script), "--workload", str(WL), "--level", "replay"]) == 0
    assert "# source: " in err and "# speedup vs unscheduled: " in err


def test_json_names_the_baseline(toy_model, capsys):
    from dragon_dsl.cli.main import main

    rc = main(["suggest", str(WL), "--model", str(toy_model), "-k", "1", "--search-trials", "2", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["verified"]
    # the toy model's scripts, or two search trials, may not beat the program as written: then the
    # answer is no schedule (`source: unscheduled`), timed as the baseline
    assert data["source"] in ("model", "search", "unscheduled") and data["baseline_kind"] == "unscheduled"
    assert data["baseline"] > 0 and data["speedup_vs_baseline"] == data["baseline"] / data["latency_us"]


def test_bad_inputs_are_refused_before_the_model_loads(capsys, tmp_path, monkeypatch):
    from dragon_dsl.cli.main import main

    def no_model(*a, **k):  # the model must not even be asked for
        raise AssertionError("the model was loaded for a bad input")

    def code(argv) -> int:  # argparse refuses an unknown target itself (SystemExit 2)
        try:
            return main(argv)
        except SystemExit as exc:
            return exc.code

    monkeypatch.setattr("dragon_model.api.recommend", no_model)
    assert code(["suggest", str(WL), "--target", "nosuchtarget"]) == 2
    assert "nosuchtarget" in capsys.readouterr().err
    bad = tmp_path / "bad.tvmscript"
    bad.write_text("this is not TVMScript\n")
    assert code(["suggest", str(bad)]) == 2
    assert "bad.tvmscript" in capsys.readouterr().err


def test_on_a_cpu_nothing_slower_than_the_unscheduled_program_is_the_answer(toy_model):
    """When no candidate (model or search) runs as fast as the program as written, the answer is no
    schedule, and says so. Here the baseline is reported 1,000x faster than it ran, so every real
    candidate is slower than it."""
    import dataclasses

    from dragon_dsl import check_text
    from dragon_dsl.engine import Engine, resolve_target
    from dragon_model.api import recommend

    class FastBaseline(Engine):
        def baseline(self, workload, kind="unscheduled", level="time", **timing):
            res = super().baseline(workload, kind=kind, level=level, **timing)
            return dataclasses.replace(res, latency_us=res.latency_us / 1000)

    engine = FastBaseline(resolve_target("llvm").spec, cache=False, timeout_s=60)
    try:
        rec = recommend(str(WL), "llvm", k=1, model_path=toy_model, search_trials=2, engine=engine)
    finally:
        engine.close()
    assert rec.source == "unscheduled" and rec.verified
    assert rec.latency_us == rec.baseline and rec.speedup_vs_baseline == 1.0
    assert "the answer is no schedule" in rec.note
    program, diags = check_text(rec.script)
    assert program.instructions == [] and not [d for d in diags if d.severity.value == "error"]
    assert any(c["source"] == "search" for c in rec.candidates), "the search ran before giving up"

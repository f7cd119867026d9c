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
    assert data["source"] in ("model", "search") and data["baseline_kind"] == "unscheduled"
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

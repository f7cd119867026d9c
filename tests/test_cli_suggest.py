"""`dragon suggest` and `dragon improve` as the command line shows them: what they print
for each outcome, their exit codes, their progress lines, and the header of the script they print.
The model and the engine are stood in for (the model's own behaviour: tests/model/), so these run
in a second; the checks of the printed script are real."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")  # the model's commands are there only with the [model] extra

from dragon_dsl.cli.check import main as check_main
from dragon_dsl.cli.main import main as dragon

EXAMPLES = Path(__file__).parent.parent / "dragon_dsl" / "examples"
TRACE = EXAMPLES / "matmul_256.llvm.trace.json"
WORKLOAD = EXAMPLES / "matmul_256.tvmscript"


class FakeEngine:
    def __init__(self, *args, **kwargs):
        self.kwargs = kwargs

    def close(self):
        pass


@pytest.fixture
def answer(monkeypatch, tmp_path):
    """`recommend` answering with the shipped example's script (TVM's header: the workload's file
    name only); the arguments it was called with are kept in `calls`."""
    import dragon_dsl.engine
    from dragon_model.recommendation import Recommendation

    out = tmp_path / "example.dragon"
    assert dragon(["import", str(TRACE), "--workload", "matmul_256.tvmscript", "--target", "llvm", "-o", str(out)]) == 0
    script = out.read_text()
    calls: list = []

    def recommend(workload, **kw):
        calls.append({"workload": workload, **kw})
        kw["stage"]("generating", "1/2 candidate(s)")
        kw["stage"]("measuring", "2/2 script(s)")
        rec = Recommendation(script=script, verified=True, latency_us=100.0, source="model", candidates_tried=2)
        rec.exact_script = script + "l9 = get_loops(b0)\n"
        rec.baseline, rec.baseline_kind, rec.speedup_vs_baseline = 500.0, "unscheduled", 5.0
        for key, value in getattr(answer_fixture, "override", {}).items():
            setattr(rec, key, value)
        return rec

    answer_fixture = type("A", (), {"calls": calls, "override": {}, "script": script})
    monkeypatch.setattr("dragon_model.api.recommend", recommend)
    monkeypatch.setattr(dragon_dsl.engine, "Engine", FakeEngine)
    return answer_fixture


# --- 3. progress that is never silent ---------------------------------------------------------------
def test_progress_is_plain_lines_when_stderr_is_not_a_terminal(answer, capsys):
    assert dragon(["suggest", str(WORKLOAD)]) == 0
    err = capsys.readouterr().err
    for line in (
        "dragon: loading the model (",
        "dragon: generating 1/2 candidate(s) (",
        "dragon: measuring 2/2 script(s) (",
    ):
        assert line in err, err
    assert " s)" in err


def test_budget_workers_device_and_level_reach_the_model_and_the_engine(answer, capsys, monkeypatch):
    engines = []
    monkeypatch.setattr("dragon_dsl.engine.Engine", lambda *a, **kw: engines.append(kw) or FakeEngine())
    argv = ["suggest", str(WORKLOAD), "--budget", "30", "--workers", "3", "--device", "rpc://h:9190/k", "-k", "2"]
    assert dragon(argv) == 0
    (call,) = answer.calls
    assert call["budget_s"] == 30.0 and call["k"] == 2 and call["level"] == "time"
    assert engines[0]["workers"] == 3 and engines[0]["device"] == "rpc://h:9190/k"


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_a_budget_that_is_no_number_of_seconds_is_a_usage_error(value, capsys):
    with pytest.raises(SystemExit) as exc:
        dragon(["suggest", str(WORKLOAD), "--budget", value])
    assert exc.value.code == 2 and "--budget" in capsys.readouterr().err


# --- 4. the printed script checks where it was printed --------------------------------------------------
def test_the_header_names_the_workload_as_given_and_the_saved_output_replays(answer, capsys, tmp_path, monkeypatch):
    (tmp_path / "wl").mkdir()
    (tmp_path / "wl" / "mm.tvmscript").write_text(WORKLOAD.read_text())
    monkeypatch.chdir(tmp_path)
    assert dragon(["suggest", "wl/mm.tvmscript"]) == 0
    out = capsys.readouterr().out
    assert 'workload "wl/mm.tvmscript"' in out and "matmul_256.tvmscript" not in out
    (tmp_path / "saved.dragon").write_text(out)
    assert check_main(["saved.dragon", "--level", "replay"]) == 0
    # with -o in another folder: relative to that folder, as a header path is
    (tmp_path / "out").mkdir()
    assert dragon(["suggest", "wl/mm.tvmscript", "-o", "out/s.dragon"]) == 0
    assert 'workload "../wl/mm.tvmscript"' in (tmp_path / "out" / "s.dragon").read_text()
    assert check_main(["out/s.dragon", "--level", "replay"]) == 0


def test_the_default_workload_is_named_by_its_full_path(answer, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert dragon(["suggest"]) == 0
    out = capsys.readouterr().out
    assert f'workload "{WORKLOAD}"' in out
    (tmp_path / "s.dragon").write_text(out)
    assert check_main(["s.dragon", "--level", "replay"]) == 0


# --- 5. the trace stays exact where the user asks for it -----------------------------------------------
def test_exact_shows_the_script_as_measured(answer, capsys):
    assert dragon(["suggest", str(WORKLOAD), "--exact"]) == 0
    assert "l9 = get_loops(b0)" in capsys.readouterr().out
    assert dragon(["suggest", str(WORKLOAD)]) == 0
    assert "l9 = get_loops(b0)" not in capsys.readouterr().out


# --- 2. improve on a script that is already the fastest -----------------------------------------------
def test_improve_on_the_fastest_script_is_a_success(answer, capsys, tmp_path):
    answer.override.update(
        source="given",
        note="your script is already the fastest of 5 verified candidate(s) (100.000 us; the fastest other: 120.000 us)",
        given_latency_us=100.0,
        speedup_vs_given=1.0,
    )
    given = tmp_path / "given.dragon"
    given.write_text(answer.script)
    assert dragon(["improve", str(WORKLOAD), str(given)]) == 0
    out, err = capsys.readouterr()
    assert "# source: given (your script is already the fastest of 5 verified candidate(s)" in err
    assert "error" not in err and "speedup vs the given script" not in err
    assert "get_sblock" in out


# --- 1. a GPU target without a GPU ------------------------------------------------------------------------
def test_suggest_for_a_gpu_without_one_is_one_line_exit_2_before_the_model_loads(answer, capsys, monkeypatch):
    import dragon_dsl.engine

    monkeypatch.setattr(dragon_dsl.engine, "local_gpus", lambda: ())
    assert dragon(["suggest", str(WORKLOAD), "--target", "cuda"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if "Unable to detect CUDA version" not in ln]
    assert err == [
        "error: this machine has no GPU: level 'build' works here; 'verify' and 'time' need a GPU or an rpc:// "
        "device (--device rpc://HOST:PORT/KEY, or --level build here)"
    ]
    assert answer.calls == []


def test_suggest_at_level_build_is_untimed_and_says_so(answer, capsys, monkeypatch):
    import dragon_dsl.engine

    monkeypatch.setattr(dragon_dsl.engine, "local_gpus", lambda: ())
    answer.override.update(latency_us=None, baseline=None, speedup_vs_baseline=None)
    assert dragon(["suggest", str(WORKLOAD), "--target", "cuda", "--level", "build"]) == 0
    assert answer.calls[0]["level"] == "build"
    assert "# latency: not timed (level build: built, not run)" in capsys.readouterr().err


def test_an_engine_error_during_suggest_is_one_line_and_exit_2(answer, capsys, monkeypatch):
    from dragon_dsl.engine import EngineError

    def no_tracker(*_a, **_k):
        raise EngineError("RPC tracker h:9190: connection refused")

    monkeypatch.setattr("dragon_dsl.engine.Engine", no_tracker)
    assert dragon(["suggest", str(WORKLOAD), "--device", "rpc://h:9190/k"]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if not ln.startswith("dragon: ")]
    assert lines == ["error: RPC tracker h:9190: connection refused"]


# --- 8. improve with its arguments swapped ------------------------------------------------------------------
def test_improve_with_its_arguments_swapped_says_so(answer, capsys, tmp_path):
    given = tmp_path / "given.dragon"
    given.write_text(answer.script)
    assert dragon(["improve", str(given), str(WORKLOAD)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: {given}: a .dragon script where the workload (.tvmscript) goes; the arguments are WORKLOAD "
        f"SCRIPT: dragon improve {WORKLOAD} {given}"
    )
    assert answer.calls == []


def test_a_workload_that_is_no_module_is_named_with_its_position(answer, capsys, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("# a comment\nx.y\n")
    assert dragon(["suggest", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:2:1: error: not a TVMScript module with a prim_func: ") and "Attribute" in err


# --- 6. install hints that can be followed ---------------------------------------------------------------------
def test_the_install_hint_works_from_this_checkout(monkeypatch, tmp_path):
    from dragon_dsl.cli import entry

    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(root)
    assert entry.install_hint("model") == (
        "pip install torch==2.13.0 && pip install -e '.[model]' (once published: pip install 'little-dragon[model]')"
    )
    monkeypatch.chdir(tmp_path)
    assert entry.install_hint("tvm").startswith(f"pip install -e '{root}[tvm]'")
    monkeypatch.setattr(entry, "checkout_root", lambda: None)
    assert entry.install_hint("tvm") == "pip install 'little-dragon[tvm]'"


def test_json_names_the_workload_as_the_printed_script_does(answer, capsys, tmp_path, monkeypatch):
    import json

    (tmp_path / "mm.tvmscript").write_text(WORKLOAD.read_text())
    monkeypatch.chdir(tmp_path)
    assert dragon(["suggest", "mm.tvmscript", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert 'workload "mm.tvmscript"' in data["script"] and 'workload "mm.tvmscript"' in data["exact_script"]

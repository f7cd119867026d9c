"""The `dragon` command line: demo, import, export."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import DATA

from dragon_dsl.cli.main import main


def run(args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "dragon_dsl.cli.main", *args], input=stdin, capture_output=True, text=True
    )


def test_demo_decodes_checks_round_trips_and_replays():
    r = run(["demo"])
    assert r.returncode == 0, r.stderr
    assert "round trip exact" in r.stdout
    assert "0 error(s)" in r.stdout
    # the shipped trace's query without effect is kept, and the demo says why
    assert "1 warning(s)\n(kept: the script stands for the trace exactly" in r.stdout
    assert 'T.sblock("C")' in r.stdout and "meta_schedule.unroll_explicit" in r.stdout


def test_import_then_export_is_exact(tmp_path):
    trace = json.loads((DATA.parent.parent / "dragon_dsl" / "examples" / "matmul_256.llvm.trace.json").read_text())
    src = tmp_path / "t.json"
    src.write_text(json.dumps(trace))
    out = tmp_path / "t.dragon"
    assert main(["import", str(src), "--workload", "m.tvmscript", "--target", '{"kind": "llvm"}', "-o", str(out)]) == 0
    assert out.read_text().startswith('workload "m.tvmscript"\ntarget {"kind": "llvm"}\n')
    r = run(["export", str(out)])
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == trace


def test_export_reports_diagnostics_with_a_caret(tmp_path):
    bad = tmp_path / "bad.dragon"
    bad.write_text('b0 = get_sblock("C")\nl1, l2 = split(b0, [None, 4])\n')
    r = run(["export", str(bad)])
    assert r.returncode == 1
    assert "bad.dragon:2:16: error DRG102: split: 'loop' expects a loop, but 'b0' is a block" in r.stderr
    assert "^^" in r.stderr


def test_import_rejects_bad_json_with_a_position(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[[["GetSBlock", [], ["C", "main"], ["b0"]]], [')
    r = run(["import", str(bad)])
    assert r.returncode == 2
    assert "bad.json:1:" in r.stderr and "not JSON" in r.stderr


def test_import_rejects_invalid_trace(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[[["GetBlock", [], ["C", "main"], ["b0"]]], []]')
    r = run(["import", str(bad)])
    assert r.returncode == 1
    assert "DRG502" in r.stderr and "GetBlock" in r.stderr


def test_import_rejects_a_malformed_target_with_a_position(tmp_path):
    src = tmp_path / "t.json"
    src.write_text('[[["GetSBlock", [], ["C", "main"], ["b0"]]], []]')
    r = run(["import", str(src), "--target", '{"kind": llvm}'])
    assert r.returncode == 2
    assert "--target: not a JSON object" in r.stderr and "column 10" in r.stderr and "Traceback" not in r.stderr

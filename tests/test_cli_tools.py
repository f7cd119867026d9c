"""dragon-fmt and dragon-check as people run them: files, stdin, exit codes, formats."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import jsonschema
import pytest
from conftest import DATA, GOLDEN

from dragon_dsl.cli import check as check_cli
from dragon_dsl.cli import fmt as fmt_cli
from dragon_dsl.cli.main import main as dragon_main

UGLY = GOLDEN / "format" / "comments_and_names.in.dragon"
PRETTY = GOLDEN / "format" / "comments_and_names.out.dragon"


def test_fmt_rewrites_in_place_and_check_mode_reports(tmp_path, capsys):
    f = tmp_path / "a.dragon"
    shutil.copy(UGLY, f)
    assert fmt_cli.main(["--check", str(f)]) == 1
    assert f.read_text() == UGLY.read_text(), "--check writes nothing"
    assert fmt_cli.main(["--diff", str(f)]) == 0
    assert '+workload "matmul.tvmscript"' in capsys.readouterr().out
    assert fmt_cli.main([str(f)]) == 0
    assert f.read_text() == PRETTY.read_text()
    assert fmt_cli.main(["--check", str(f)]) == 0


def test_fmt_on_a_folder_and_on_stdin(tmp_path):
    (tmp_path / "sub").mkdir()
    shutil.copy(UGLY, tmp_path / "sub" / "x.dragon")
    assert fmt_cli.main(["--check", str(tmp_path)]) == 1
    r = subprocess.run(
        [sys.executable, "-m", "dragon_dsl.cli.fmt", "-"], input=UGLY.read_text(), capture_output=True, text=True
    )
    assert r.returncode == 0 and r.stdout == PRETTY.read_text()


def test_fmt_refuses_unparsable_text_and_keeps_the_file(tmp_path, capsys):
    f = tmp_path / "bad.dragon"
    f.write_text('b0 = get_sblock("C"\n')
    assert fmt_cli.main([str(f)]) == 2
    assert f.read_text() == 'b0 = get_sblock("C"\n'
    err = capsys.readouterr().err
    assert "bad.dragon:1:20: error DRG003" in err


def test_unreadable_and_non_utf8_files_get_positioned_errors(tmp_path, capsys):
    f = tmp_path / "latin1.dragon"
    f.write_bytes(b'b0 = get_sblock("\xe9")\n')
    assert fmt_cli.main([str(f)]) == 2
    assert "latin1.dragon:1:18: not UTF-8 text" in capsys.readouterr().err
    assert check_cli.main([str(tmp_path / "missing.dragon")]) == 2


def test_check_exit_codes(tmp_path):
    good = tmp_path / "good.dragon"
    good.write_text('b0 = get_sblock("C")\ncompute_inline(b0)\n')
    warn = tmp_path / "warn.dragon"
    warn.write_text('b0 = get_sblock("C")\nl1, l2 = get_loops(b0)\n')
    bad = tmp_path / "bad.dragon"
    bad.write_text('b0 = get_sblock("C")\nparallel(b0)\n')
    assert check_cli.main([str(good)]) == 0
    assert check_cli.main([str(warn)]) == 0
    assert check_cli.main([str(warn), "--strict"]) == 1
    assert check_cli.main([str(bad)]) == 1
    assert check_cli.main([str(good), "--level", "nonsense"]) == 2


def test_check_json_findings_have_the_documented_fields(tmp_path, capsys):
    bad = tmp_path / "bad.dragon"
    bad.write_text('b0 = get_sblock("C")\nparallel(b0)\n')
    check_cli.main([str(bad), "--format", "json"])
    (f,) = json.loads(capsys.readouterr().out)
    assert set(f) == {"code", "severity", "file", "line", "column", "end_line", "end_column", "message", "related"}
    assert (f["code"], f["line"], f["column"], f["end_line"], f["end_column"]) == ("DRG102", 2, 10, 2, 12)


def test_sarif_output_validates_against_the_schema(tmp_path, capsys):
    schema = json.loads((DATA / "schemas" / "sarif-2.1.0-rtm.5.json").read_text(encoding="utf-8"))
    a = tmp_path / "a.dragon"
    a.write_text('b0 = get_sblock("C")\nb0 = get_sblock("D")\nparallel(b0)\n')
    b = tmp_path / "b.dragon"
    b.write_text('b0 = get_sblock("C"\n')
    assert check_cli.main([str(a), str(b), "--format", "sarif"]) == 1
    log = json.loads(capsys.readouterr().out)
    jsonschema.validate(log, schema)
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"DRG103", "DRG102", "DRG003"}
    assert any("relatedLocations" in r for r in results)


def test_check_workers_give_the_same_findings(tmp_path, capsys):
    files = []
    for i in range(6):
        f = tmp_path / f"f{i}.dragon"
        f.write_text('b0 = get_sblock("C")\n' + ("parallel(b0)\n" if i % 2 else "compute_inline(b0)\n"))
        files.append(str(f))
    check_cli.main(files + ["--format", "json"])
    serial = json.loads(capsys.readouterr().out)
    check_cli.main(files + ["--format", "json", "--workers", "2"])
    assert json.loads(capsys.readouterr().out) == serial


@pytest.mark.parametrize("database", ["matmul_64", "softmax_64"])
def test_import_of_a_real_database_passes_verify(tmp_path, monkeypatch, database):
    """Scripts imported from a real MetaSchedule database (a short CPU tuning run) replay,
    build and compute the right result (dragon-check --level verify)."""
    monkeypatch.setenv("DRAGON_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "imported"
    assert dragon_main(["import", "--database", str(DATA / "tuning" / database), "-o", str(out), "--top", "4"]) == 0
    scripts = sorted(out.glob("*.dragon"))
    assert len(scripts) == 4 and len(list(out.glob("*.tvmscript"))) == 1
    assert check_cli.main([str(p) for p in scripts] + ["--level", "verify"]) == 0


def test_workload_command_writes_a_loadable_workload(tmp_path):
    out = tmp_path / "mm.tvmscript"
    assert dragon_main(["workload", "matmul(16,16,16)", "-o", str(out)]) == 0
    from dragon_dsl.tvm.workload import load_workload

    assert load_workload(out) is not None
    assert dragon_main(["workload", "nonsense(1)"]) == 2
    assert dragon_main(["workload", "C2D:99"]) == 2


def test_a_crashing_kernel_is_a_finding_and_the_run_goes_on(monkeypatch, capsys, tmp_path):
    """dragon-check on a crashing kernel, then a correct one: both get their verdict."""
    monkeypatch.chdir(GOLDEN / "check")
    monkeypatch.setenv("DRAGON_CACHE_DIR", str(tmp_path))
    rc = check_cli.main(["crashing_kernel.dragon", "good_matmul.dragon", "--level", "verify", "--format", "json"])
    findings = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert [(f["file"], f["code"]) for f in findings] == [("crashing_kernel.dragon", "DRG702")]
    rc = check_cli.main(["good_matmul.dragon", "--level", "verify"])
    assert rc == 0


def test_import_of_a_database_marks_failed_records_and_names_bad_lines(tmp_path, capsys):
    """A record MetaSchedule marked failed (run seconds 1e10) is imported as failed, last, not as
    measured at 1e16 us; a line that is not JSON is an error with its file, line and column;
    --workload names the header's workload and writes no workload file."""
    db = tmp_path / "db"
    shutil.copytree(DATA / "tuning" / "matmul_64", db)
    records = db / "database_tuning_record.json"
    lines = records.read_text().splitlines()
    first = json.loads(lines[0])
    first[1][1] = [1e10]
    records.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    out = tmp_path / "out"
    assert dragon_main(["import", "--database", str(db), "-o", str(out), "--workload", "mm.tvmscript"]) == 0
    scripts = sorted(out.glob("*.dragon"))
    assert len(scripts) == len(lines) and not list(out.glob("*.tvmscript"))
    assert all('workload "mm.tvmscript"' in p.read_text() for p in scripts)
    assert scripts[-1].read_text().startswith("# MetaSchedule's build or run of this record failed\n")
    assert not any("e+16" in p.read_text() or "10000000000000000" in p.read_text() for p in scripts)
    capsys.readouterr()
    records.write_text(lines[0] + "\n{broken\n")
    assert dragon_main(["import", "--database", str(db), "-o", str(tmp_path / "o2")]) == 2
    assert f"{records}:2:2: not JSON" in capsys.readouterr().err
    assert not (tmp_path / "o2").exists()


def test_check_with_workers_gives_the_serial_reports(capsys):
    """Below the build level, --workers N checks files in spawned processes: the same reports, in
    the files' order, as one process."""
    files = sorted(str(f) for f in (GOLDEN / "check").glob("*.dragon"))[:8]
    assert len(files) == 8
    assert check_cli.main(["--level", "types", "--format", "json", *files]) in (0, 1)
    serial = capsys.readouterr().out
    assert check_cli.main(["--level", "types", "--format", "json", "--workers", "2", *files]) in (0, 1)
    assert capsys.readouterr().out == serial and json.loads(serial)

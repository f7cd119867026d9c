"""What a new user meets first: files the commands write, messages for wrong inputs, flags and help.

Each test is a reproducer of issue 24 ("First contact and hard inputs")."""

from __future__ import annotations

import argparse
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dragon_dsl.cli import check as check_cli
from dragon_dsl.cli import fmt as fmt_cli
from dragon_dsl.cli.main import build_parser
from dragon_dsl.cli.main import main as dragon

EXAMPLES = Path(__file__).parent.parent / "dragon_dsl" / "examples"
TRACE = EXAMPLES / "matmul_256.llvm.trace.json"
WORKLOAD = EXAMPLES / "matmul_256.tvmscript"


def run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "dragon_dsl.cli.main", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture
def script(tmp_path) -> Path:
    """The shipped example as a script next to its workload."""
    (tmp_path / "matmul_256.tvmscript").write_text(WORKLOAD.read_text())
    out = tmp_path / "m.dragon"
    assert dragon(["import", str(TRACE), "--workload", "matmul_256.tvmscript", "--target", "llvm", "-o", str(out)]) == 0
    return out


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- files the commands write ----------------------------------------------------------------------
def test_workload_and_import_write_files_like_any_other_with_a_final_newline(tmp_path):
    old = os.umask(0o022)
    try:
        assert dragon(["workload", "matmul(16,16,16)", "-o", str(tmp_path / "w.tvmscript")]) == 0
        assert dragon(["import", str(TRACE), "-o", str(tmp_path / "t.dragon")]) == 0
        assert dragon(["export", str(tmp_path / "t.dragon"), "-o", str(tmp_path / "t.json")]) == 0
    finally:
        os.umask(old)
    for name in ("w.tvmscript", "t.dragon", "t.json"):
        path = tmp_path / name
        assert _mode(path) == 0o644, name
        assert path.read_text().endswith("\n") and not path.read_text().endswith("\n\n"), name
    assert json.loads((tmp_path / "t.json").read_text()) == json.loads(TRACE.read_text())


def test_show_writes_to_a_file_with_o(script, tmp_path):
    out = tmp_path / "scheduled.py"
    assert dragon(["show", str(script), "-o", str(out)]) == 0
    assert 'T.sblock("C")' in out.read_text() and out.read_text().endswith("\n")


# --- a workload that is not TVMScript ------------------------------------------------------------
@pytest.mark.parametrize(
    "text, where, words",
    [
        (
            "hello world, this is not TVMScript\n",
            ":1:7:",
            ["not a TVMScript module with a prim_func: invalid Python syntax", "hello world", "^"],
        ),
        (
            "import numpy\nx = 1\n",
            ":1:1:",
            ["not a TVMScript module with a prim_func: no @T.prim_func", "import numpy"],
        ),
        (
            "# from tvm.script import ir as I\n@I.ir_module\nclass M:\n    @T.prim_func\n"
            '    def main(A: T.Buffer((4,), "float32")):\n        T.evaluate(B)\n',
            ":6:9:",
            ["Undefined variable: B", "T.evaluate(B)"],
        ),
    ],
)
def test_a_workload_that_does_not_parse_is_named_with_its_line(tmp_path, text, where, words):
    bad = tmp_path / "bad.py"
    bad.write_text(text)
    r = run("workload", bad)
    assert r.returncode == 2
    assert f"{bad}{where} error: " in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr
    assert "Traceback" not in r.stderr
    assert not r.stderr.lstrip().startswith("|")


def test_a_bad_workload_in_a_replay_check_names_the_workload_file_and_line(script, tmp_path, capsys):
    bad = tmp_path / "bad.tvmscript"
    bad.write_text("import numpy\n")
    assert check_cli.main([str(script), "--level", "replay", "--workload", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"DRG602: {bad}:1:1: not a TVMScript module with a prim_func: " in out


def test_explain_names_a_bad_workload_with_its_line(script, tmp_path):
    bad = tmp_path / "bad.tvmscript"
    bad.write_text("x = 1\nimport numpy\n")
    r = run("explain", script, "--workload", bad)
    assert r.returncode == 1
    assert r.stderr.startswith(f"{bad}:1:1: error: not a TVMScript module with a prim_func: ") and "x = 1" in r.stderr


# --- an unknown target, at every level -----------------------------------------------------------
@pytest.mark.parametrize("level", ["types", "replay", "build"])
def test_an_unknown_target_flag_is_a_usage_error_at_every_level(script, level, capsys):
    assert check_cli.main([str(script), "--level", level, "--target", "nosuchtarget"]) == 2
    err = capsys.readouterr().err
    assert 'unknown target "nosuchtarget": not a TVM target kind or tag' in err and "Traceback" not in err


@pytest.mark.parametrize("level", ["types", "replay", "build"])
def test_an_unknown_target_in_the_header_is_a_diagnostic_at_every_level(script, level, capsys):
    text = script.read_text().replace('target "llvm"', 'target "nosuchtarget"')
    assert 'target "nosuchtarget"' in text
    script.write_text(text)
    assert check_cli.main([str(script), "--level", level]) == 1
    out = capsys.readouterr().out
    assert f'{script}:2:8: error DRG207: unknown target "nosuchtarget"' in out


def test_a_misspelt_target_option_gets_a_hint(script, capsys):
    assert check_cli.main([str(script), "--target", '{"kind": "llvm", "num_cores": 2}']) == 2
    assert 'has no option "num_cores" (did you mean "num-cores"?)' in capsys.readouterr().err


def test_show_cuda_names_the_scripts_target(script):
    r = run("show", script, "--cuda")
    assert r.returncode == 1
    assert "--cuda shows CUDA source, but the script's target is llvm" in r.stderr
    assert "code generation failed" not in r.stderr and "Traceback" not in r.stderr


# --- dragon import on what is not a trace ----------------------------------------------------------
def test_import_of_json_that_is_not_a_trace_says_what_the_file_holds(tmp_path):
    obj = tmp_path / "obj.json"
    obj.write_text('{"name": "matmul", "trials": 3}\n')
    r = run("import", obj)
    assert r.returncode == 1
    assert r.stderr.strip() == (
        f"{obj}: error: not a trace: a TVM trace is [instructions, decisions], "
        f'but this file holds a JSON object (keys: "name", "trials")'
    )


def test_import_of_an_invalid_trace_points_at_the_instruction_in_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[\n  [["GetSBlock", [], ["C", "main"], ["b0"]],\n   ["Nope", [], [], []]],\n  []\n]\n')
    r = run("import", bad)
    assert r.returncode == 1
    first = r.stderr.splitlines()[0]
    assert (
        first == f"{bad}:3:4: error DRG502: instruction 1: unknown instruction kind 'Nope' (not in TVM 0.27's 52 kinds)"
    )
    assert '["Nope", [], [], []]' in r.stderr and "<trace>" not in r.stderr and "error: <" not in r.stderr


def test_import_of_a_bad_decision_points_at_the_decision(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[[["GetSBlock", [], ["C", "main"], ["b0"]],\n  ["GetLoops", ["b0"], [], ["l1"]]],\n [[1, 3]]]\n')
    r = run("import", bad)
    assert r.returncode == 1
    assert r.stderr.startswith(f"{bad}:3:3: error DRG504: instruction 1 (GetLoops) takes no decision")


def test_import_of_broken_json_gives_its_position(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[[["GetSBlock", [], ["C" "main"], ["b0"]]], []]')
    r = run("import", bad)
    assert r.returncode == 2
    assert r.stderr.startswith(f"{bad}:1:26: error DRG501: not JSON: Expecting ',' delimiter")


# --- nothing to do is an error -------------------------------------------------------------------
def test_check_and_fmt_of_a_folder_without_scripts_fail(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert check_cli.main([str(tmp_path / "empty")]) == 2
    assert f"{tmp_path / 'empty'}: a folder with no .dragon files" in capsys.readouterr().err
    assert fmt_cli.main([str(tmp_path / "empty")]) == 2
    assert "a folder with no .dragon files" in capsys.readouterr().err


# --- flags ---------------------------------------------------------------------------------------
def test_workers_is_the_one_name_and_jobs_still_works():
    p = check_cli.build_parser()
    assert p.parse_args(["x"]).jobs == 1
    assert p.parse_args(["x", "--workers", "3"]).jobs == 3
    assert p.parse_args(["x", "--jobs", "4"]).jobs == 4 and p.parse_args(["x", "-j", "5"]).jobs == 5
    assert "--workers" in p.format_help() and "--jobs" not in p.format_help()
    sub = _subparsers(build_parser())
    for cmd in (["search"], ["corpus", "build"], ["corpus", "verify"], ["eval"]):
        q = sub[cmd[0]] if len(cmd) == 1 else _subparsers(sub[cmd[0]])[cmd[1]]
        assert "--workers" in q.format_help() and "--jobs" not in q.format_help(), cmd
        dest = next(a.dest for a in q._actions if "--workers" in a.option_strings)
        assert next(a.dest for a in q._actions if "--jobs" in a.option_strings) == dest, cmd


def _subparsers(p: argparse.ArgumentParser) -> dict:
    return next(a.choices for a in p._actions if isinstance(a, argparse._SubParsersAction))


def _without_help(p: argparse.ArgumentParser, name: str) -> list[str]:
    out = []
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub_name, sp in a.choices.items():
                if sub_name not in ("fmt", "check"):  # `dragon fmt` hands its arguments to dragon-fmt
                    out += _without_help(sp, f"{name} {sub_name}")
        elif not a.help and not isinstance(a, argparse._HelpAction):
            out.append(f"{name} {'/'.join(a.option_strings) or a.dest}")
    return out


def test_every_argument_has_help_text():
    missing = (
        _without_help(build_parser(), "dragon")
        + _without_help(check_cli.build_parser(), "dragon-check")
        + _without_help(fmt_cli.build_parser(), "dragon-fmt")
    )
    assert missing == []

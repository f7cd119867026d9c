"""What a new user meets first, second round: each test is a reproducer of an item of issue 57
("a GPU target on a laptop ... `improve` on a script that is already best")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dragon_dsl.cli import check as check_cli
from dragon_dsl.cli.main import main as dragon

EXAMPLES = Path(__file__).parent.parent / "dragon_dsl" / "examples"
TRACE = EXAMPLES / "matmul_256.llvm.trace.json"
WORKLOAD = EXAMPLES / "matmul_256.tvmscript"


def run(*args, cwd=None, module="dragon_dsl.cli.main"):
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True, text=True, cwd=cwd)


@pytest.fixture
def script(tmp_path) -> Path:
    """The shipped example as a script next to its workload."""
    (tmp_path / "matmul_256.tvmscript").write_text(WORKLOAD.read_text())
    out = tmp_path / "m.dragon"
    assert dragon(["import", str(TRACE), "--workload", "matmul_256.tvmscript", "--target", "llvm", "-o", str(out)]) == 0
    return out


@pytest.fixture
def no_gpu(monkeypatch):
    """This process sees no GPU (as on the machine the issue was found on, whatever runs the test)."""
    import dragon_dsl.engine

    monkeypatch.setattr(dragon_dsl.engine, "local_gpus", lambda: ())


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip() and "Warning: Unable to detect CUDA version" not in ln]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# --- 1. a GPU target on a machine without a GPU ---------------------------------------------------
@pytest.mark.parametrize("level", ["verify", "time"])
def test_check_with_a_gpu_level_and_no_gpu_is_one_line_and_exit_2(script, level, no_gpu, capsys):
    assert check_cli.main([str(script), "--target", "cuda", "--level", level]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("error: this machine has no GPU: level 'build' works here")
    assert "--device rpc://HOST:PORT/KEY" in line


def test_an_engine_that_finds_no_gpu_is_one_line_and_exit_2(script, capsys, monkeypatch):
    """Where the check before the engine does not see it (a header's GPU target), the engine's own
    error is turned into the same one line."""
    from dragon_dsl.engine import EngineError

    class NoGpu:
        def __init__(self, *_args):
            pass

        def __call__(self, _target):
            raise EngineError("this machine has no GPU: level 'build' works here; 'verify' and 'time' need a GPU")

        def close(self):
            pass

    monkeypatch.setattr(check_cli, "_Engines", NoGpu)
    assert check_cli.main([str(script), "--level", "verify"]) == 2
    assert _one_line(capsys.readouterr().err).startswith("error: this machine has no GPU")


def test_check_takes_a_device_and_refuses_a_bad_one(script, capsys):
    assert check_cli.main([str(script), "--device", "gpu0"]) == 2
    assert "device 'gpu0': expected 'local' or 'rpc://HOST:PORT/KEY'" in capsys.readouterr().err
    assert check_cli.build_parser().parse_args(["x", "--device", "rpc://h:9190/h100"]).device == "rpc://h:9190/h100"


# --- 8. TVM's parser errors --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, where, words",
    [
        ("a < b\n", ":1:1:", ["no @T.prim_func", "a < b"]),
        ("", ":", ["it is empty"]),
        ("# only\n# comments\n", ":", ["it holds only comments"]),
        ("# a comment\nimport numpy\n", ":2:1:", ["no @T.prim_func", "import numpy"]),
    ],
)
def test_a_file_that_is_no_workload_says_so_with_its_position(tmp_path, text, where, words):
    bad = tmp_path / "bad.tvmscript"
    bad.write_text(text)
    r = run("workload", bad)
    assert r.returncode == 2
    assert r.stderr.startswith(f"{bad}{where} error: not a TVMScript module with a prim_func: "), r.stderr
    for w in words:
        assert w in r.stderr
    for raw in ("Visitor of AST node is not implemented: Compare", "IRBuilder", "Check failed", "Traceback"):
        assert raw not in r.stderr.split("(TVM's parser:")[0], r.stderr


# --- 9. a workload error in a check points at the workload line -------------------------------------
def test_a_workload_error_points_at_the_workload_line_not_at_a_comment(script, tmp_path, capsys):
    bad = tmp_path / "bad.tvmscript"
    bad.write_text("a < b\n")
    text = script.read_text()
    assert text.startswith("#") or text.startswith("workload")
    script.write_text("# a comment first\n" + text)
    assert check_cli.main([str(script), "--level", "replay", "--workload", str(bad)]) == 1
    out = capsys.readouterr().out
    line = 1 + next(i for i, ln in enumerate(script.read_text().splitlines()) if ln.startswith("workload "))
    assert f"{script}:{line}:1: error DRG602: {bad}:1:1: not a TVMScript module" in out, out


# --- 7. flags that agree -----------------------------------------------------------------------------
def _subparsers(p) -> dict:
    import argparse

    return next(a.choices for a in p._actions if isinstance(a, argparse._SubParsersAction))


def _command(*names):
    from dragon_dsl.cli.main import build_parser

    p = build_parser()
    for name in names:
        p = _subparsers(p)[name]
    return p


def _options(p) -> set:
    return {o for a in p._actions if a.help != "==SUPPRESS==" for o in a.option_strings}


WRITERS = [("search",), ("measure",), ("eval",), ("corpus", "build"), ("import",), ("export",), ("show",)]
WRITERS += [("workload",), ("workloads",), ("explain",)]


@pytest.mark.parametrize("names", WRITERS, ids=" ".join)
def test_every_command_that_writes_takes_o_and_output(names):
    assert {"-o", "--output"} <= _options(_command(*names))


@pytest.mark.parametrize(
    "names, old, new, value",
    [
        (("search",), "--out", "-o", "RUN"),
        (("measure",), "--out", "--output", "R.jsonl"),
        (("eval",), "--out", "-o", "OUT"),
        (("corpus", "build"), "--out", "-o", "C"),
        (("eval",), "--k", "-k", "3"),
        (("eval",), "--model-path", "--model", "M"),
        (("eval",), "--seeds", "--input-sets", "5"),
        (("measure",), "--seeds", "--input-sets", "5"),
        (("search",), "--json", "--json-out", "s.json"),
        (("corpus", "verify"), "--json", "--json-out", "v.json"),
    ],
)
def test_the_old_spelling_is_a_hidden_alias_of_the_new(names, old, new, value):
    p = _command(*names)
    assert new in _options(p) and (old not in _options(p) or old == "--json")
    base = {
        "search": ["W", "--target", "llvm", "--budget", "2"],
        "measure": ["B.jsonl", "--target", "llvm"],
        "eval": ["--workloads", "W", "--target", "llvm"],
        "build": ["RUN"],
        "verify": ["C"],
    }[names[-1]]
    if old != "--out" and names[-1] != "verify":
        base += ["-o", "X"]
    assert vars(p.parse_args([*base, old, value])) == vars(p.parse_args([*base, new, value]))


def test_json_is_a_switch_for_standard_output_everywhere():
    for names, base in (
        (("search",), ["W", "--target", "llvm", "--budget", "2", "-o", "R"]),
        (("corpus", "verify"), ["C"]),
    ):
        assert _command(*names).parse_args(base + ["--json"]).json == "-"
    assert _command("measure").parse_args(["B", "--target", "llvm", "-o", "R", "--json"]).json is True


def test_a_missing_required_output_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        dragon(["search", "W", "--target", "llvm", "--budget", "2"])
    assert exc.value.code == 2
    assert "the following arguments are required: -o/--output" in capsys.readouterr().err


def test_suggest_and_improve_take_workers_device_k_model_and_budget():
    for name in ("suggest", "improve"):
        opts = _options(_command(name))
        assert {"--workers", "--device", "-k", "--model", "--budget", "--json", "-o", "--output"} <= opts, name


def test_dragon_version():
    from dragon_dsl import __version__

    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"dragon {__version__}"


# --- 7. dragon workload names its generators -------------------------------------------------------------
def test_workload_help_lists_every_te_workload_function_and_family():
    tvm = pytest.importorskip("tvm")
    import inspect

    from tvm.s_tir.meta_schedule.testing import te_workload

    from dragon_dsl.cli.main import TE_WORKLOADS, family_parameters

    del tvm
    functions = sorted(
        n
        for n, f in vars(te_workload).items()
        if inspect.isfunction(f)
        and f.__module__ == te_workload.__name__
        and not n.startswith("_")
        and list(inspect.signature(f).parameters)[:1] not in (["name"], ["Input"])
    )
    assert list(TE_WORKLOADS) == functions
    text = " ".join(_command("workload").format_help().split())
    for name in (*TE_WORKLOADS, *family_parameters()):
        assert f" {name}" in text, name
    assert "softmax(m,n)" in text and "layer_norm(m,n,rms)" in text


@pytest.mark.parametrize(
    "spec, words",
    [("softmax(64,128)", ['A: T.Buffer((64, 128), "float32")']), ("layer_norm(m=8,n=64,rms=0)", ["(8, 64)"])],
)
def test_workload_makes_an_operator_family_by_position_or_name(spec, words, capsys):
    pytest.importorskip("tvm")
    assert dragon(["workload", spec]) == 0
    out = capsys.readouterr().out
    assert "@T.prim_func" in out
    for w in words:
        assert w in out


@pytest.mark.parametrize(
    "spec, message",
    [
        ("softmax(64)", "softmax(64): softmax needs n: softmax(m, n)"),
        ("softmax(q=1,m=2,n=3)", "softmax has no parameter 'q': softmax(m, n)"),
        ("nosuch(1)", "te_workload has no function 'nosuch'"),
    ],
)
def test_a_wrong_family_spec_says_what_it_takes(spec, message, capsys):
    pytest.importorskip("tvm")
    assert dragon(["workload", spec]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


# --- 9. smaller things -------------------------------------------------------------------------------------
@pytest.mark.parametrize("level", ["types", "replay"])
def test_an_empty_script_is_a_warning_not_silence(tmp_path, level, capsys):
    empty = tmp_path / "empty.dragon"
    empty.write_text("")
    rc = check_cli.main([str(empty), "--level", level])
    out = capsys.readouterr().out
    assert f"{empty}:1:1: warning DRG108: no instructions: the script schedules nothing" in out
    assert rc == (0 if level == "types" else 1)  # at replay: no workload either
    assert check_cli.main([str(empty), "--strict"]) == 1
    capsys.readouterr()
    # a header without instructions is the workload as written (`dragon suggest`'s "no schedule"): no warning
    empty.write_text('target "llvm"\n')
    assert check_cli.main([str(empty), "--strict"]) == 0
    assert "DRG108" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "text", ["import numpy\n", "This is a README. See the docs.\n", '{"a": 1}\n', "@I.ir_module\nclass M:\n    pass\n"]
)
def test_a_file_that_is_not_dragon_gets_as_many_errors_from_every_command(tmp_path, text, capsys):
    bad = tmp_path / "bad.dragon"
    bad.write_text(text)
    counts = []
    assert check_cli.main([str(bad)]) == 1
    counts.append(capsys.readouterr().out.count(" error DRG"))
    for command in ("export", "show", "explain"):
        assert dragon([command, str(bad)]) == 1
        counts.append(capsys.readouterr().err.count(" error DRG"))
    assert len(set(counts)) == 1 and counts[0] >= 1, counts


def test_a_gpu_limit_broken_in_many_places_is_said_once():
    from dragon_dsl.tvm.errors import tvm_message

    lanes = "Number of lanes (32) times number of bytes (128) for dtype T.float32x32 is greater than the maximum (16)"
    text = f"GPU constraint(s) violated:\n    {lanes}\n    {lanes}\n    Used threads (2048) > 1024\n    {lanes}\n  In function main"
    assert tvm_message(RuntimeError(text)) == f"GPU constraint(s) violated: {lanes} Used threads (2048) > 1024"


def test_explain_names_a_plain_target_once(script, capsys):
    pytest.importorskip("tvm")
    text = script.read_text()
    script.write_text(text.replace(next(ln for ln in text.splitlines() if ln.startswith("target ")), 'target "llvm"'))
    assert dragon(["explain", str(script)]) == 0
    out = capsys.readouterr().out
    assert 'fact("target llvm' in out and "(llvm)" not in out


def test_hover_for_a_client_without_markdown_is_plain_text():
    from dragon_dsl.language.table import BY_NAME
    from dragon_lsp.convert import hover
    from dragon_lsp.features.data import HoverInfo
    from dragon_lsp.features.hover import instruction_markdown

    info = HoverInfo(instruction_markdown(BY_NAME["split"]), None)
    plain = hover(info, ["x"], "utf-16", markdown=False).contents
    assert plain.kind == "plaintext"
    assert "```" not in plain.value and "`" not in plain.value and "**" not in plain.value
    assert plain.value.startswith("split(loop: loop, factors: list[factor]")
    rich = hover(info, ["x"], "utf-16", markdown=True).contents
    assert rich.kind == "markdown" and rich.value.startswith("```dragon\nsplit(")


@pytest.mark.parametrize(
    "names",
    [("search",), ("measure",), ("eval",), ("corpus", "build"), ("corpus", "verify"), ("suggest",), ("improve",)],
    ids=" ".join,
)
def test_every_command_that_measures_takes_device(names):
    assert "--device" in _options(_command(*names))
    assert "--device" in _options(check_cli.build_parser())


SOFTMAX_ANSWER = """workload "softmax.tvmscript"
target "llvm"

b0 = get_sblock("T_softmax_maxelem")
b1 = get_sblock("T_softmax_exp")
annotate(b1, "meta_schedule.tiling_structure", "SSRSRS")
l2, l3 = get_loops(b0)
v4, v5, v6, v7 = sample_perfect_tile(l2, n=4, max_innermost_factor=64, decision=[128, 1, 2, 1])
l8, l9, l10, l11 = split(l2, [v4, v5, v6, v7])
v12, v13, v14, v15 = sample_perfect_tile(l3, n=4, max_innermost_factor=64, decision=[2, 4, 128, 1])
l16, l17, l18, l19 = split(l3, [v12, v13, v14, v15])
v20, v21 = sample_perfect_tile(l8, n=2, max_innermost_factor=64, decision=[64, 2])
l22, l23 = split(l8, [v20, v21])
v24, v25 = sample_perfect_tile(l9, n=2, max_innermost_factor=64, decision=[1, 1])
l26, l27 = split(l9, [v24, v25])
l28, l29 = split(l22, [None, 64])
parallel(l29)
l30, l31, l32, l33, l34, l35, l36, l37, l38, l39, l40 = get_loops(b0)
b41 = get_consumers(b0)
l42, l43 = split(l31, [None, 64])
annotate(b41, "pragma_auto_unroll_max_step", 64)
annotate(b41, "pragma_unroll_explicit", 1)
l44, l45, l46, l47, l48, l49, l50, l51, l52, l53, l54, l55 = get_loops(b0)
v56, v57, v58, v59 = sample_perfect_tile(l55, n=4, max_innermost_factor=64, decision=[1, 1, 1, 1])
l60, l61, l62, l63 = split(l55, [v56, v57, v58, v59])
l64 = fuse(l60)
"""


def test_the_explanation_tiles_each_axis_as_the_script_does(tmp_path, capsys):
    """The model's answer for a row softmax (issue 57's transcript) samples v_i0 and v_k once each,
    then splits tile loops again: the explanation's tiling is the first sample's, as the script's."""
    pytest.importorskip("tvm")
    assert dragon(["workload", "softmax(256,1024)", "-o", str(tmp_path / "softmax.tvmscript")]) == 0
    (tmp_path / "s.dragon").write_text(SOFTMAX_ANSWER)
    capsys.readouterr()
    assert dragon(["explain", str(tmp_path / "s.dragon")]) == 0
    out = capsys.readouterr().out
    assert "block T_softmax_maxelem is tiled v_i0 as [128, 1, 2, 1], v_k as [2, 4, 128, 1];" in out

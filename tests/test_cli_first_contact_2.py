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

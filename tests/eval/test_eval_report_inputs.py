"""`dragon eval-report`'s bad inputs: each a clear error (exit 2), nothing written."""

import json

import pytest

from dragon_dsl.cli.main import main


def _shard(folder, i, n, body):
    (folder / f"results-shard-{i}-of-{n}.json").write_text(body if isinstance(body, str) else json.dumps(body))


@pytest.mark.parametrize(
    "files, message",
    [
        ([], "no shard results"),
        (
            [(0, 2, {"schema": 1, "measurements": []}), (0, 3, {"schema": 1, "measurements": []})],
            "shard results of 2 and 3 shards",
        ),
        ([(0, 1, "{not json")], "results-shard-0-of-1.json: not a results file"),
        ([(0, 1, {"schema": 99, "measurements": []})], "not a results file of schema 1"),
    ],
    ids=["empty", "mixed-counts", "not-json", "other-schema"],
)
def test_bad_shard_folders(tmp_path, capsys, files, message):
    for i, n, body in files:
        _shard(tmp_path, i, n, body)
    assert main(["eval-report", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists() and not (tmp_path / "report.md").exists()


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--run-timeout", "0", "--run-timeout: expected a positive number of seconds, got 0"),
        ("--timeout", "-5", "--timeout: expected a positive number of seconds, got -5"),
        ("--stop-after", "0", "--stop-after: expected a positive number of seconds"),
    ],
)
def test_bad_eval_limits(tmp_path, capsys, option, value, message):
    """`dragon eval`'s limits are checked before anything starts (no engine, nothing written)."""
    out = tmp_path / "out"
    assert main(["eval", "--workloads", str(tmp_path), "--target", "llvm", "--out", str(out), option, value]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_generate_only_cannot_write_another_decoder_version(tmp_path, capsys):
    import shutil
    from pathlib import Path

    from dragon_dsl.eval.methods import generation_version

    root = Path(__file__).resolve().parents[2]
    shutil.copy(root / "tests/data/workloads/matmul_64.tvmscript", tmp_path)
    out = tmp_path / "out"
    older = str(generation_version() - 1)
    assert (
        main(
            [
                "eval",
                "--workloads",
                str(tmp_path),
                "--target",
                "llvm",
                "--out",
                str(out),
                "--methods",
                "model",
                "--generate-only",
                "--generation-version",
                older,
            ]
        )
        == 2
    )
    assert f"--generation-version {older}: this code writes decoder version" in capsys.readouterr().err
    assert not (out / "model").exists()


@pytest.mark.parametrize(
    "body, to, message",
    [
        ('{"measurements": [\n  oops', "out", "results.json:2:3: not JSON"),
        (
            json.dumps({"measurements": [], "workloads": []}),
            "out",
            "not a `dragon eval` results file (missing methods, command)",
        ),
        (json.dumps([1, 2]), "out", "not a `dragon eval` results file (missing (not an object))"),
        (
            json.dumps({"measurements": [], "workloads": [], "methods": {}, "command": []}),
            ".",
            "holds results.json itself",
        ),
        (json.dumps({"measurements": [], "workloads": [], "methods": {}, "command": []}), None, "--results needs --to"),
    ],
    ids=["not-json", "missing-keys", "not-an-object", "same-folder", "no-to"],
)
def test_bad_results_to_render_again(tmp_path, capsys, body, to, message):
    src = tmp_path / "results.json"
    src.write_text(body)
    argv = ["eval-report", "--results", str(src)] + (["--to", str(tmp_path / to)] if to else [])
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert src.read_text() == body and not (tmp_path / "report.md").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "argv", [["eval-report"], ["eval-report", "somewhere", "--results", "r.json"]], ids=["neither", "both"]
)
def test_eval_report_needs_one_source(capsys, argv):
    assert main(argv) == 2
    assert "give either OUT_DIR" in capsys.readouterr().err

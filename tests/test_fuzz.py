"""Derandomised fuzzing (tests/fuzzing.py): thousands of mutants of real scripts and traces.

The API raises nothing but DragonError; dragon-fmt and dragon-check (at --level types)
never print a traceback and exit 0, 1 or 2. A failure names the mutant's index:
rebuild it with `fuzzing.mutant(i)` / `fuzzing.trace_mutant(i)`. The 100,000-mutant
run is benchmarks/fuzz_100k.py.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import fuzzing
import pytest

N_SCRIPTS = 1500
N_TRACES = 1500
N_FILES = 150


def test_script_mutants_raise_only_dragon_errors():
    failures = [(i, repr(e)[:200]) for i in range(N_SCRIPTS) if (e := fuzzing.check(fuzzing.mutant(i))) is not None]
    assert failures == []


def test_trace_mutants_raise_only_dragon_errors_and_decoded_traces_encode():
    failures = [
        (i, repr(e)[:200]) for i in range(N_TRACES) if (e := fuzzing.check_trace(fuzzing.trace_mutant(i))) is not None
    ]
    assert failures == []


@pytest.fixture(scope="module")
def mutant_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("mutants")
    written = 0
    i = 10**6  # other mutants than the API test's
    while written < N_FILES:
        text = fuzzing.mutant(i)
        i += 1
        if fuzzing.file_safe(text):
            (d / f"m{written:04d}.dragon").write_text(text, encoding="utf-8", newline="")
            written += 1
    return d


@pytest.mark.parametrize(
    "tool,args",
    [
        ("dragon_dsl.cli.fmt", ["--check", "-q"]),
        ("dragon_dsl.cli.check", ["--level", "types"]),
        ("dragon_dsl.cli.check", ["--level", "types", "--format", "json"]),
    ],
)
def test_cli_tools_never_print_a_traceback(mutant_dir, tool, args):
    """In process (every file, one by one, so a failure names it), then once as a command."""
    import importlib

    main = importlib.import_module(tool).main
    for path in sorted(mutant_dir.iterdir()):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([*args, str(path)])
            except SystemExit as exc:  # argparse
                code = exc.code
        assert code in (0, 1, 2), path
        assert "Traceback" not in err.getvalue() + out.getvalue(), path
    run = subprocess.run(
        [sys.executable, "-m", tool, *args, str(mutant_dir)], capture_output=True, text=True, timeout=600
    )
    assert run.returncode in (0, 1, 2)
    assert "Traceback" not in run.stderr + run.stdout

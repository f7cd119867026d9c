"""Hostile inputs get diagnostics, never a traceback.

One test per reproducer: nesting 10,000 deep through the API and the command-line
tools, a byte order mark, a multi-megabyte line in a rendered diagnostic, the script
size limit, a long integer, statement-by-statement recovery keeping positions.
Speed is not timed here.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import dragon_dsl
from dragon_dsl import DragonError
from dragon_dsl.cli.render import SourceLines, render_diagnostic, snippet
from dragon_dsl.language.limits import MAX_INT_DIGITS, MAX_NESTING, MAX_SCRIPT_CHARS, MAX_SNIPPET_CHARS

HEAD = 'b0 = get_sblock("C")\n'


def nested(n: int, open_="[", close="]") -> str:
    return HEAD + 'annotate(b0, "k", ' + open_ * n + "1" + close * n + ")\n"


def codes(diags) -> list[str]:
    return [d.code for d in diags if d.severity.value == "error"]


@pytest.mark.parametrize("n", [10_000])
@pytest.mark.parametrize("brackets", [("[", "]"), ("(", ",)"), ('{"k": ', "}"), ("read(", ")")])
def test_deep_nesting_is_a_diagnostic_in_every_api_function(n, brackets):
    text = nested(n, *brackets)
    _, diags = dragon_dsl.check_text(text)
    assert codes(diags) == ["DRG005"]
    d = [d for d in diags if d.code == "DRG005"][0]
    assert d.span.line == 2 and 19 < d.span.column < 19 + MAX_NESTING * len(brackets[0]) + 2
    for f in (dragon_dsl.to_trace_json, dragon_dsl.format_text):
        with pytest.raises(DragonError) as exc:
            f(text)
        assert "DRG005" in str(exc.value)


def test_nesting_limit_is_exact():
    """call + lists + integer: MAX_NESTING levels pass, one more is DRG005 (same in the decoder)."""
    ok, deep = nested(MAX_NESTING - 2), nested(MAX_NESTING - 1)
    assert codes(dragon_dsl.check_text(ok)[1]) == []
    assert codes(dragon_dsl.check_text(deep)[1]) == ["DRG005"]
    trace = dragon_dsl.to_trace_json(ok)
    assert dragon_dsl.from_trace_json(trace) == dragon_dsl.format_text(ok)
    value = trace[0][1][1][1]
    trace[0][1][1][1] = [value]
    with pytest.raises(DragonError, match="DRG005"):
        dragon_dsl.from_trace_json(trace)


@pytest.mark.parametrize(
    "text",
    [
        HEAD + 'annotate(b0, "k", ' + "-" * 10_000 + "1)\n",
        HEAD + "transform_layout(b0, read(0), lambda i: " + " + ".join(["i"] * 10_000) + ")\n",
        HEAD + ")\n" + 'annotate(b0, "k", ' + "[" * 10_000 + "1" + "]" * 10_000 + ")\n",  # the recovery path
    ],
)
def test_long_operator_chains_and_recovery_are_limited_too(text):
    _, diags = dragon_dsl.check_text(text)
    assert "DRG005" in codes(diags)
    assert all(d.span.line >= 1 for d in diags)


def test_a_trace_nested_10000_deep_is_a_diagnostic():
    v = 1
    for _ in range(10_000):
        v = [v]
    trace = [[["GetSBlock", [], ["C", "main"], ["b0"]], ["Annotate", ["b0", v], ["k"], []]], []]
    with pytest.raises(DragonError, match="DRG005"):
        dragon_dsl.from_trace_json(trace)


def _run(module: str, *args, stdin: str | None = None):
    return subprocess.run(
        [sys.executable, "-m", module, *args], input=stdin, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("n", [10_000, 50_000])
def test_dragon_fmt_and_dragon_check_report_deep_nesting(tmp_path, n):
    path = tmp_path / "deep.dragon"
    path.write_text(nested(n), encoding="utf-8")
    fmt = _run("dragon_dsl.cli.fmt", "--check", str(path))
    assert fmt.returncode == 2 and "Traceback" not in fmt.stderr
    assert "DRG005" in fmt.stderr
    check = _run("dragon_dsl.cli.check", str(path))
    assert check.returncode == 1 and "DRG005" in check.stdout and "Traceback" not in check.stderr
    # the snippet shows a window of the line, not all of it
    assert max(len(line) for line in (fmt.stderr + check.stdout).splitlines()) < MAX_SNIPPET_CHARS + 40


def test_a_byte_order_mark_is_accepted(tmp_path):
    text = "\ufeff" + HEAD + "l1, l2 = get_loops(b0)\n"
    _, diags = dragon_dsl.check_text(text)
    assert codes(diags) == []
    assert dragon_dsl.to_trace_json(text) == dragon_dsl.to_trace_json(text[1:])
    path = tmp_path / "bom.dragon"
    path.write_bytes(text.encode("utf-8"))
    check = _run("dragon_dsl.cli.check", str(path))
    assert check.returncode == 0, check.stdout + check.stderr
    # positions are the editor's: the mark is not a column
    _, diags = dragon_dsl.check_text('\ufeffb0 = get_sblock("C")\nl1 = get_loops(b9)\n')
    d = [d for d in diags if d.code == "DRG101"][0]
    assert (d.span.line, d.span.column) == (2, 16)


def test_a_huge_line_is_cut_around_the_caret():
    line = 'annotate(b0, "k", "' + "x" * 3_000_000 + '", 7)'
    text = HEAD + line + "\n"
    _, diags = dragon_dsl.check_text(text)
    d = [d for d in diags if d.code == "DRG203"][0]
    out = render_diagnostic(d, text, "big.dragon")
    head, shown, caret = out.splitlines()[:3]
    assert len(shown) < MAX_SNIPPET_CHARS + 20 and shown.rstrip().endswith("...") is False
    assert shown.split("| ", 1)[1].startswith("...")
    col = caret.index("^") - caret.index("|") - 2
    assert shown.split("| ", 1)[1][col] == "7"
    # short lines are shown whole, long ones both cut when the caret is in the middle
    assert snippet("abc", 2, 1) == ("abc", 2, 1)
    text2, caret2, width2 = snippet("y" * 10_000, 5_000, 3)
    assert text2.startswith("...") and text2.endswith("...") and text2[caret2 - 1] == "y" and width2 == 3


def test_rendering_indexes_the_source_once():
    text = "".join(f'b{i} = get_sblock("C{i}")\n' for i in range(2000))
    lines = SourceLines(text)
    assert len(lines) == 2000 and lines.line(1234) == 'b1233 = get_sblock("C1233")'
    assert len(SourceLines("a\r\nb\rc")) == 3 and SourceLines("a\r\nb\rc").line(2) == "b"


def test_the_script_size_limit_is_a_diagnostic(tmp_path):
    text = HEAD + "#" + "x" * (MAX_SCRIPT_CHARS - len(HEAD)) + "\n"
    assert len(text) > MAX_SCRIPT_CHARS
    script, diags = dragon_dsl.parse(text)
    assert codes(diags) == ["DRG005"] and script.statements == []
    assert "16 MiB" in diags[0].message
    with pytest.raises(DragonError, match="DRG005"):
        dragon_dsl.to_trace_json(text)
    path = tmp_path / "big.dragon"
    path.write_text(text, encoding="utf-8")
    check = _run("dragon_dsl.cli.check", str(path))
    assert check.returncode == 1 and "DRG005" in check.stdout and "Traceback" not in check.stderr


def test_a_long_integer_is_a_diagnostic():
    for tail in ("", ")\n"):  # the fast path and the recovery path
        text = HEAD + 'annotate(b0, "k", ' + "1" * (MAX_INT_DIGITS + 1) + ")\n" + tail
        _, diags = dragon_dsl.check_text(text)
        assert "DRG005" in codes(diags)
    text = HEAD + 'annotate(b0, "k", ' + "1" * MAX_INT_DIGITS + ")\n"
    assert codes(dragon_dsl.check_text(text)[1]) == []


def test_recovery_keeps_positions_and_continuations():
    text = (
        HEAD
        + "l1, l2 = get_loops(b0)\n" * 3
        + ")\n"
        + "l9 = fuse(l1,\n  l2)\n"
        + "l7, l8 = \\\n  get_loops(b0)\n"
        + "bad(\n"
    )
    _, diags = dragon_dsl.check_text(text)
    syntax = [(d.code, d.span.line, d.span.column) for d in diags if d.code < "DRG100"]
    assert syntax == [("DRG002", 5, 1), ("DRG003", 10, 5)], syntax


def test_did_you_mean_among_many_definitions():
    text = "".join(f'block_{i} = get_sblock("C{i}")\n' for i in range(5000)) + "l = get_loops(blok_4321)\n"
    _, diags = dragon_dsl.check_text(text)
    d = [d for d in diags if d.code == "DRG101"][0]
    assert d.suggestion == "block_4321"

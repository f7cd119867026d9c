"""Unit tests of the server's own layers: the incremental parse equals the core's, positions
convert both ways, documents apply edits with LSP's line rules, settings validate."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types as lsp

from dragon_dsl import parse
from dragon_dsl.language.check import check
from dragon_dsl.language.diagnostics import Span
from dragon_lsp import convert
from dragon_lsp.analysis import Analysis, parse_document
from dragon_lsp.commands import Request
from dragon_lsp.config import Settings, SettingsError, initialization_settings, merge
from dragon_lsp.documents import Document
from tests.conftest import DATA
from tests.lsp.helpers import SCRIPT

FRAGMENTS = [
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    ":",
    '"',
    "\n",
    " ",
    "#",
    "split",
    "l1",
    "b0",
    "v4",
    "lambda i: i",
    "\\\n",
    "{",
    "}",
    "-",
    "//",
    "1",
    "2.5",
    "None",
    "explain:\n",
    "postproc:\n",
    "😀",
    "é",
    "\t",
    "x=",
]


def _real_scripts(limit=40):
    import dragon_dsl

    out = []
    with open(DATA / "traces" / "handwritten.jsonl", encoding="utf-8") as f:
        for line in f:
            out.append(dragon_dsl.from_trace_json(json.loads(line)["trace"], workload="w.tvmscript"))
    return out[:limit]


def _mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 3)):
        i = rng.randint(0, len(text))
        j = min(len(text), i + rng.randint(0, 6))
        text = text[:i] + rng.choice(FRAGMENTS) + text[j:]
    return text


def test_incremental_parse_equals_the_core():
    """The statement-at-a-time path gives the core's diagnostics and the same checked program."""
    rng = random.Random(8)
    texts = [SCRIPT] + _real_scripts()
    n = 0
    for base in texts:
        for _ in range(25):
            text = _mutate(base, rng).replace("\r\n", "\n").replace("\r", "\n")
            mine, my_diags = parse_document(text)
            core, core_diags = parse(text)
            if "\\\n" in text and core_diags != my_diags:
                continue  # the core's own recovery cuts statements without `\\` continuations too
            assert my_diags == core_diags, text
            a, da = check(mine)
            b, db = check(core)
            assert da == db
            assert [i.entry.name for i in a.instructions] == [i.entry.name for i in b.instructions]
            n += 1
    assert n > 500


@given(st.text(alphabet=st.sampled_from(["a", "é", "😀", "\t", "𝔸", " "]), max_size=30), st.data())
def test_positions_round_trip(line, data):
    for enc in (convert.UTF8, convert.UTF16, convert.UTF32):
        cp = data.draw(st.integers(0, len(line)))
        units = convert.cp_to_units(line, cp, enc)
        assert convert.units_to_cp(line, units, enc) == cp
        assert (
            units
            == len(line[:cp].encode({"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[enc]))
            // {"utf-8": 1, "utf-16": 2, "utf-32": 4}[enc]
        )


def test_document_edits_follow_lsp_line_breaks():
    doc = Document("file:///x.dragon", "a😀b\r\nc\u2028d\re", 1)
    # \u2028 is not a line break in LSP; \r alone is
    change = lsp.TextDocumentContentChangePartial(range=lsp.Range(lsp.Position(0, 3), lsp.Position(2, 0)), text="X")
    doc.apply([change], 2, "utf-16")
    assert doc.text == "a😀Xe" and doc.version == 2
    far = lsp.TextDocumentContentChangePartial(range=lsp.Range(lsp.Position(99, 5), lsp.Position(99, 9)), text="!")
    doc.apply([far], 3, "utf-16")
    assert doc.text == "a😀Xe!"


def test_settings_validate():
    s = merge(
        Settings(),
        {
            "device": "rpc",
            "trackerAddress": "h:1/k",
            "timeouts": {"build": 0, "measure": 5},
            "suggest": {"builder": "magic"},
            "unknown": 1,
            "pythonPath": "/p",
            "trace": {},
        },
    )
    assert s.engine_device() == "rpc://h:1/k" and s.measure_timeout == 5.0
    assert s.build_timeout == Settings().build_timeout and s.suggest_builder == "auto"
    assert sorted(p.split(":")[0] for p in s.problems) == [
        "dragon.suggest.builder",
        "dragon.timeouts.build",
        "dragon.unknown",
    ]
    assert merge(Settings(), {"device": "cpu", "target": "nvidia/nvidia-h100"}).target_for("cuda") == "llvm"
    assert merge(Settings(), {}).target_for("cuda") == "cuda"
    assert merge(Settings(), {}).target_for(None) == "llvm"


def test_settings_empty_strings_are_unset():
    s = merge(Settings(), {"target": "llvm", "device": "cpu", "trackerAddress": "h:1", "modelPath": "/m"})
    s = merge(
        s,
        {"target": "", "device": "", "trackerAddress": "", "modelPath": " ", "workload": "", "timeouts": {"replay": 7}},
    )
    assert (s.target, s.device, s.tracker_address, s.model_path, s.workload) == (None, None, None, None, None)
    assert s.problems == () and s.replay_timeout == 7 and s.engine_device() == "local"


def test_settings_devices_and_targets():
    def dev(**kw):
        return merge(Settings(), kw).engine_device()

    assert dev() == "local" and dev(device="local", trackerAddress="h:9190") == "local"
    assert dev(trackerAddress="h:9190") == "rpc://h:9190/dragon"  # automatic: the tracker
    assert dev(device="rpc", trackerAddress="10.1.2.3:9190/a100") == "rpc://10.1.2.3:9190/a100"
    assert dev(device="rpc://x:1/k", trackerAddress="h:9190") == "rpc://x:1/k"
    with pytest.raises(SettingsError, match="trackerAddress is empty"):
        dev(device="rpc")
    bad = merge(Settings(), {"device": "gpu", "trackerAddress": "h", "target": "llvm -num-cores=2"})
    assert len(bad.problems) == 3 and bad.device is None and bad.tracker_address is None and bad.target is None
    assert merge(Settings(), {"target": '{"kind": "llvm", "num-cores": 2}'}).target == {"kind": "llvm", "num-cores": 2}
    assert merge(Settings(), {"target": {"kind": "cuda"}}).target == {"kind": "cuda"}
    assert "JSON" in merge(Settings(), {"target": "{nope"}).problems[0]
    assert initialization_settings({"settings": {"target": "llvm"}}) == {"target": "llvm"}
    assert initialization_settings({"dragon": {}}) is None and initialization_settings(None) is None


def test_command_arguments():
    lines = ['b0 = get_sblock("😀")', "l1 = x"]
    req = convert.command_request(
        [
            {
                "uri": "file:///a.dragon",
                "version": 3,
                "target": "",
                "device": "cpu",
                "trackerAddress": "",
                "prompt": "p",
                "range": {"start": {"line": 0, "character": 18}, "end": {"line": 1, "character": 2}},
            }
        ],
        lambda uri: lines,
        "utf-16",
    )
    assert req == Request(
        "file:///a.dragon", 3, {"target": "", "device": "cpu", "trackerAddress": ""}, Span(1, 18, 2, 3), "p"
    )
    assert convert.command_request([{"uri": "u"}], lambda uri: None, "utf-16") == Request("u")
    for bad in (
        [],
        ["u"],
        [{"uri": ""}],
        [{"uri": "u", "version": True}],
        [{"uri": "u", "prompt": 3}],
        [{"uri": "u", "range": [1, 2]}],
    ):
        with pytest.raises(ValueError):
            convert.command_request(bad, lambda uri: lines, "utf-16")


def test_analysis_reuses_statements_across_versions():
    broken = SCRIPT.replace("vectorize(l11)", "vectorize(l11")
    first = Analysis(broken, 1)
    second = Analysis(broken.replace("decision=[8, 8]", "decision=[4, 16]"), 2, previous=first)
    fresh = [s for s in second.statements if not any(s is t for t in first.statements)]
    assert len(fresh) == 1 and fresh[0].span.line == SCRIPT[: SCRIPT.index("decision=[8, 8]")].count("\n") + 1
    an = second
    for i in range(50):  # what a version keeps of the previous ones is bounded by the document
        an = Analysis(broken + f"\nx{i} = y(", i, previous=an)
    assert len(an._memo.statements) + len(an._memo.segments) <= 3 * len(an.statements) + 1024


def test_the_server_never_evaluates_text_and_imports_no_tvm():
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "lsp"
    pattern = re.compile(r"\b(eval|exec)\(|as_python\(")
    offenders = [
        f"{p.name}:{n}"
        for p in root.rglob("*.py")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line.split("#", 1)[0])
    ]
    assert offenders == []
    code = (
        "import sys, dragon_lsp.server, dragon_lsp.session, dragon_lsp.features.completion; "
        "sys.exit(1 if 'tvm' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_the_cursor_context_lexes_with_the_languages_rules():
    from dragon_dsl.language.syntax import lexical
    from dragon_lsp.features.context import LEX

    def kinds(text):
        return [(m.lastgroup, m.group()) for m in LEX.finditer(text) if m.lastgroup != "WS"]

    assert ("NUM", "007") not in kinds("f(007)")  # `007` is no integer (lexical.INT)
    assert ("NUM", "1.5e3") in kinds("f(1.5e3, 7)") and ("NUM", "7") in kinds("f(1.5e3, 7)")
    assert kinds('x = "ab') == [("NAME", "x"), ("OP", "="), ("STR", '"ab')]  # a string being typed
    for word in ("b0", "_x1", "None"):
        assert kinds(word) == [("NAME", word)] and lexical.is_name(word)


def test_nearest_visible_is_visible_cut_to_the_nearest():
    from tests.lsp.test_incremental import blocks

    def reference(an, line, kinds, prefix, limit):
        names = an.visible(line, kinds)
        if len(names) <= limit:
            return names, False
        if prefix:
            names = [v for v in names if v[0].startswith(prefix)]
        return (names[-limit:], True) if len(names) > limit else (names, False)

    rng = random.Random(3)
    for text in (SCRIPT, blocks(60)):
        an = Analysis(text, 1)
        for _ in range(200):
            args = (
                rng.randrange(1, len(an.lines) + 2),
                rng.choice([("loop",), ("block",), ("block", "loop", "value")]),
                rng.choice([None, "", "t", "io1", "b", "zz"]),
                rng.choice([1, 5, 50, 300]),
            )
            assert an.nearest_visible(*args) == reference(an, *args), args

"""Stress: thousands of random edits (hypothesis, derandomized by tests/conftest.py's profile).

1. In process: each edit goes through the server's document store and every feature runs at a
   random position; nothing may raise and the heap must stay bounded.
2. Over stdio: the real server takes the edits as didChange notifications interleaved with
   requests; it must answer everything, publish for the last version exactly the diagnostics
   the language core gives for the text the client holds (so its copy stayed in sync), and its
   resident memory must stay bounded.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp

from dragon_lsp import convert
from dragon_lsp.analysis import Analysis
from dragon_lsp.documents import Document
from dragon_lsp.features import actions, completion, formatting, hover, inlay, navigation, signature, symbols, tokens
from tests.lsp.conftest import make_client, start
from tests.lsp.helpers import SCRIPT, SERVER, status

BASE = SCRIPT.split("\n", 3)[3]  # no workload header: no replay, diagnostics are the core's alone

PIECES = [
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    ":",
    '"',
    "\n",
    "\r\n",
    " ",
    "#",
    "split",
    "l1",
    "b0",
    "v4",
    "_",
    "lambda i, j: (i, j // 4)",
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
    "decision=",
    'bind(l1, "threadIdx.x")\n',
    "sample_perfect_tile(",
    "get_loops(b0)\n",
    "\u2028",
    "\x00",
    "workload",
]

texts = st.lists(st.sampled_from(PIECES), max_size=4).map("".join)
edits = st.tuples(st.integers(0, 40), st.integers(0, 90), st.integers(0, 3), st.integers(0, 20), texts)
positions = st.tuples(st.integers(0, 40), st.integers(0, 90))


def _change(edit):
    line, char, dl, dc, text = edit
    return lsp.TextDocumentContentChangePartial(
        range=lsp.Range(lsp.Position(line, char), lsp.Position(line + dl, char + dc if dl == 0 else dc)), text=text
    )


def _all_features(an: Analysis, line: int, col: int):
    hover.hover(an, line, col)
    completion.complete(an, line, col, blocks=["C", "root"], workload_files=["m.tvmscript"])
    signature.signature_help(an.lines, line, col)
    navigation.definition(an, line, col)
    navigation.references(an, line, col)
    try:
        navigation.rename(an, line, col, "fresh_name")
    except navigation.RenameError:
        pass
    convert.semantic_tokens(tokens.semantic_tokens(an), an.lines, convert.UTF16)
    symbols.document_symbols(an)
    inlay.inlay_hints(an, None)
    actions.quick_fixes(an, an.diagnostics)
    for d in an.diagnostics:
        convert.diagnostic(d, an.lines, convert.UTF16, "file:///s.dragon")


class _Heap:
    """Peak-free heap size after a collection, sampled twice: after warm-up and at the end."""

    def __init__(self):
        self.samples = []

    def sample(self):
        gc.collect()
        self.samples.append(tracemalloc.get_traced_memory()[0])


HEAP = _Heap()
COUNT = {"edits": 0, "examples": 0}


@settings(max_examples=100)
@given(st.lists(edits, min_size=10, max_size=30), st.lists(positions, min_size=3, max_size=6))
def _random_edits_in_process(edit_list, where):
    doc = Document("file:///s.dragon", BASE, 1)
    an = None
    for i, e in enumerate(edit_list):
        doc.apply([_change(e)], i + 2, convert.UTF16)
        an = Analysis(doc.text, doc.version, previous=an)  # the server's incremental path
        COUNT["edits"] += 1
        line, char = where[i % len(where)]
        _all_features(an, *convert.from_position(an.lines, lsp.Position(line, char), convert.UTF16))
    formatting.format_document(an.text)
    COUNT["examples"] += 1
    if COUNT["examples"] == 20:  # warmed up: caches and interned names filled
        HEAP.sample()


def test_random_edits_in_process_are_big_and_keep_the_heap_bounded():
    # one test runs the examples and judges them, so that it does not depend on another test having
    # run before it in the same process (pytest-xdist spreads tests over processes)
    HEAP.samples.clear()
    COUNT.update(edits=0, examples=0)
    tracemalloc.start()
    try:
        _random_edits_in_process()
        HEAP.sample()
    finally:
        tracemalloc.stop()
    assert COUNT["edits"] >= 1500
    assert len(HEAP.samples) == 2, f"{COUNT['examples']} examples ran, fewer than the 20 of the warm-up"
    warm, end = HEAP.samples
    assert end - warm < 16 * 2**20, f"heap grew from {warm / 2**20:.1f} MiB to {end / 2**20:.1f} MiB"


# ---- over stdio ------------------------------------------------------------------------------------------------


class _Server:
    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.client = make_client()
        self.loop.run_until_complete(self.client.start_io(*SERVER))
        self.loop.run_until_complete(start(self.client, {"debounceMs": 5}, {"debounceMs": 5}))
        self.proc = psutil.Process(self.client._server.pid)
        self.rss: list[int] = []
        self.examples = 0
        self.edits = 0

    def close(self):
        self.loop.run_until_complete(self.client.shutdown_session())
        self.loop.run_until_complete(self.client.stop())
        self.loop.close()


@pytest.fixture(scope="module")
def server():
    s = _Server()
    yield s
    s.close()


def _apply_local(text: str, edit) -> str:
    doc = Document("file:///x", text, 0)
    doc.apply([_change(edit)], None, convert.UTF16)
    return doc.text


async def _session(s: _Server, edit_list, where, n: int):
    c = s.client
    uri = f"file:///stress/{n}.dragon"
    ident = lsp.TextDocumentIdentifier(uri)
    c.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "dragon", 1, BASE)))
    text = BASE
    for i, e in enumerate(edit_list):
        text = _apply_local(text, e)
        c.text_document_did_change(
            lsp.DidChangeTextDocumentParams(lsp.VersionedTextDocumentIdentifier(uri=uri, version=i + 2), [_change(e)])
        )
        s.edits += 1
        if i % 5 == 0:
            p = lsp.Position(*where[i % len(where)])
            await c.text_document_hover_async(lsp.HoverParams(ident, p))
            await c.text_document_completion_async(lsp.CompletionParams(ident, p))
            await c.text_document_code_action_async(
                lsp.CodeActionParams(ident, lsp.Range(p, p), lsp.CodeActionContext(diagnostics=[]))
            )
    await c.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(ident))
    last = len(edit_list) + 1
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while c.versions.get(uri) != last and loop.time() < deadline:
        await asyncio.sleep(0.005)
    assert c.versions.get(uri) == last, "no diagnostics for the last version"
    an = Analysis(text, last)
    want = [(d.code, convert.range_(an.lines, d.span, convert.UTF16)) for d in an.diagnostics]
    got = [(d.code, d.range) for d in c.diagnostics[uri]]
    assert got == want, text
    c.text_document_did_close(lsp.DidCloseTextDocumentParams(ident))


_SERVER: list = []


@settings(max_examples=80, deadline=None)
@given(st.lists(edits, min_size=20, max_size=30), st.lists(positions, min_size=3, max_size=6))
def test_random_edits_over_stdio(server, edit_list, where):
    server.examples += 1
    server.loop.run_until_complete(_session(server, edit_list, where, server.examples))
    if server.examples in (20, 80):
        server.rss.append(server.proc.memory_info().rss)
    _SERVER[:] = [server]


def test_stdio_stress_was_big_and_bounded(server):
    assert server.edits >= 1500
    state = server.loop.run_until_complete(status(server.client))
    assert state["internal_errors"] == 0 and state["documents"] == 0
    assert server.proc.is_running()
    warm, end = server.rss[:2]
    assert end - warm < 48 * 2**20, f"server RSS grew from {warm / 2**20:.0f} MiB to {end / 2**20:.0f} MiB"

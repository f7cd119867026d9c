"""Benchmark of the language server over stdio (prints figures; not a timed test).

    python benchmarks/bench_lsp.py [--n 100] [--instructions 500]

Starts `python -m dragon_lsp`, opens a 500-instruction script and measures, as an editor
sees them (request sent -> answer read, JSON-RPC over pipes included):

1. diagnostics after a change: didChange -> publishDiagnostics for that version, for an
   edit that keeps the script valid and for one that breaks (then repairs) a statement;
   the server's debounce (setting debounceMs, default 30 ms) is part of the figure;
2. completion right after a change (the analysis of the new version is part of it);
3. hover right after a change, and on an unchanged version.

Goal: p95 under 100 ms for syntax/type diagnostics and completion.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from lsprotocol import types as lsp  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from bench_language import synthetic_script  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs) + 0.5) - 1))]


def row(name, xs):
    ms = [x * 1000 for x in xs]
    print(f"  {name:<46} p50 {statistics.median(ms):7.1f} ms   p95 {pct(ms, 95):7.1f} ms   max {max(ms):7.1f} ms")
    return pct(ms, 95)


async def main(n: int, size: int, debounce: float):
    text = synthetic_script(size).split("\n", 1)[1]  # no workload: the figures are the language core's
    lines = text.split("\n")
    mid = len(lines) // 2
    tile = next(i for i in range(mid, len(lines)) if "decision=[4, 8, 32]" in lines[i])
    split_line = next(i for i in range(mid, len(lines)) if " = split(" in lines[i])
    var_line = next(i for i in range(mid, len(lines)) if lines[i].startswith("reorder("))

    client = LanguageClient("bench", "1")
    versions: dict[int, asyncio.Future] = {}

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def published(params: lsp.PublishDiagnosticsParams):
        fut = versions.get(params.version)
        if fut is not None and not fut.done():
            fut.set_result((time.perf_counter(), len(params.diagnostics)))

    await client.start_io(sys.executable, "-m", "dragon_lsp")
    caps = lsp.ClientCapabilities(text_document=lsp.TextDocumentClientCapabilities(
        completion=lsp.CompletionClientCapabilities(completion_item=lsp.ClientCompletionItemOptions(snippet_support=True))))
    await client.initialize_async(lsp.InitializeParams(capabilities=caps, initialization_options={
        "dragon": {"debounceMs": debounce, "checkOnSave": "off"}}))
    client.initialized(lsp.InitializedParams())
    folder = Path(tempfile.mkdtemp())
    uri = (folder / "bench.dragon").as_uri()
    ident = lsp.TextDocumentIdentifier(uri)
    loop = asyncio.get_running_loop()
    versions[1] = loop.create_future()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "dragon", 1, text)))
    await versions[1]
    version = 1

    async def change(line: int, start: int, end: int, new: str, expect_errors=None):
        nonlocal version
        version += 1
        versions[version] = loop.create_future()
        t0 = time.perf_counter()
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [lsp.TextDocumentContentChangePartial(range=lsp.Range(lsp.Position(line, start), lsp.Position(line, end)),
                                                  text=new)]))
        return t0

    async def diag_after(t0):
        t1, count = await versions[version]
        return t1 - t0, count

    col = lines[tile].index("[4, 8, 32]") + 1

    # warm up (imports, caches)
    for k in range(10):
        t0 = await change(tile, col, col + 1, "8" if k % 2 == 0 else "4")
        await diag_after(t0)
    current = "4" if 10 % 2 == 0 else "8"

    valid, broken, completions, hovers, hovers_cached = [], [], [], [], []
    for k in range(n):
        new = "8" if current == "4" else "4"
        t0 = await change(tile, col, col + 1, new)
        dt, count = await diag_after(t0)
        assert count == 0, "a valid edit must leave the script clean"
        valid.append(dt)
        current = new
    close = len(lines[split_line]) - 1
    for k in range(n):
        t0 = await change(split_line, close, close + 1, "")  # drop the closing parenthesis
        dt, count = await diag_after(t0)
        assert count >= 1
        broken.append(dt)
        t0 = await change(split_line, close, close, ")")
        dt, count = await diag_after(t0)
        assert count == 0
        broken.append(dt)
    arg = lines[split_line].index("split(") + len("split(")
    for k in range(n):
        new = "8" if current == "4" else "4"
        await change(tile, col, col + 1, new)
        current = new
        t0 = time.perf_counter()
        got = await client.text_document_completion_async(lsp.CompletionParams(ident, lsp.Position(split_line, arg)))
        completions.append(time.perf_counter() - t0)
        assert len(got.items) > 50
    hover_col = lines[var_line].index("(") + 1
    for k in range(n):
        new = "8" if current == "4" else "4"
        await change(tile, col, col + 1, new)
        current = new
        t0 = time.perf_counter()
        h = await client.text_document_hover_async(lsp.HoverParams(ident, lsp.Position(var_line, hover_col)))
        hovers.append(time.perf_counter() - t0)
        assert h is not None
        t0 = time.perf_counter()
        await client.text_document_hover_async(lsp.HoverParams(ident, lsp.Position(var_line, hover_col)))
        hovers_cached.append(time.perf_counter() - t0)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()

    print(f"dragon-lsp over stdio, {size}-instruction script ({len(text)} characters), {n} samples each, "
          f"debounceMs={debounce:g}")
    p_valid = row("diagnostics after a change (valid edit)", valid)
    p_broken = row("diagnostics after a change (break/repair)", broken)
    p_comp = row("completion after a change", completions)
    row("hover after a change", hovers)
    row("hover, same version", hovers_cached)
    ok = max(p_valid, p_broken, p_comp) < 100
    print(f"goal p95 < 100 ms for diagnostics and completion: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--instructions", type=int, default=500)
    ap.add_argument("--debounce", type=float, default=30.0, help="the server's debounceMs setting")
    a = ap.parse_args()
    asyncio.run(main(a.n, a.instructions, a.debounce))

"""Benchmark of the language server over stdio (prints figures; not a timed test).

    python benchmarks/bench_lsp.py [--sizes 1000 10000] [--n 40] [--baseline PATH --baseline-n 12]

Starts `python -m dragon_lsp`, opens a script of each size (lines ~ instructions) and measures,
as an editor sees them (request sent -> answer read, JSON-RPC over pipes included):

1. diagnostics after one keystroke: didChange -> publishDiagnostics for that version, for an
   edit that keeps the script valid and for one that breaks (then repairs) a statement; the
   server's debounce (setting debounceMs, 30 ms here) is part of the figure;
2. completion right after a keystroke in the line above the cursor (a tile decision): the server
   may answer before analysing the new version only where that gives the current answer;
3. hover right after a keystroke.

With `--baseline PATH` (a checkout of another version: `git worktree add PATH COMMIT`)
the same run measures that version's server too (its `lsp/` imported as `dragon_lsp`, its
`dragon_dsl` first on the path) and prints the ratios.

Goals, on 10,000 lines: p95 under 100 ms for completion, under 500 ms for diagnostics.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_language import synthetic_script  # noqa: E402
from lsprotocol import types as lsp  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

DEBOUNCE_MS = 30


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs) + 0.5) - 1))]


def shim(checkout: Path) -> dict:
    """An environment in which `python -m dragon_lsp` runs CHECKOUT's server: its lsp/ as dragon_lsp
    (pyproject's package-dir does that for an install) and its packages ahead of the installed ones."""
    folder = Path(tempfile.mkdtemp(prefix="lsp-baseline-shim-"))
    for name, sub in (("dragon_lsp", "lsp"), ("dragon_grammar", "grammar"), ("dragon_model", "model")):
        if (checkout / sub).is_dir():
            (folder / name).symlink_to(checkout / sub)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(checkout)])}


async def start(versions: dict, env=None, cwd=None) -> LanguageClient:
    """A client on a fresh `python -m dragon_lsp`, initialized with the benchmark's debounce and no
    check on save; each published diagnostics resolves `versions[its document version]`."""
    client = LanguageClient("bench", "1")

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def published(params: lsp.PublishDiagnosticsParams):
        fut = versions.get(params.version)
        if fut is not None and not fut.done():
            fut.set_result((time.perf_counter(), len(params.diagnostics)))

    await client.start_io(sys.executable, "-m", "dragon_lsp", env=env, cwd=cwd)
    caps = lsp.ClientCapabilities(
        text_document=lsp.TextDocumentClientCapabilities(
            completion=lsp.CompletionClientCapabilities(
                completion_item=lsp.ClientCompletionItemOptions(snippet_support=True)
            )
        )
    )
    await client.initialize_async(
        lsp.InitializeParams(
            capabilities=caps, initialization_options={"dragon": {"debounceMs": DEBOUNCE_MS, "checkOnSave": "off"}}
        )
    )
    client.initialized(lsp.InitializedParams())
    return client


async def measure(size: int, n: int, env=None, cwd=None) -> dict:
    text = synthetic_script(size).split("\n", 1)[1]  # no workload: the figures are the language core's
    lines = text.split("\n")
    mid = len(lines) // 2
    tile = next(i for i in range(mid, len(lines)) if "decision=[4, 8, 32]" in lines[i])
    split_line = next(i for i in range(mid, len(lines)) if " = split(" in lines[i])
    var_line = next(i for i in range(mid, len(lines)) if lines[i].startswith("reorder("))

    versions: dict[int, asyncio.Future] = {}
    client = await start(versions, env, cwd)
    uri = (Path(tempfile.mkdtemp()) / "bench.dragon").as_uri()
    ident = lsp.TextDocumentIdentifier(uri)
    loop = asyncio.get_running_loop()
    versions[1] = loop.create_future()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "dragon", 1, text)))
    # a script cut at SIZE statements may end in a sample whose results nothing uses (a warning):
    # valid edits keep the diagnostics the opened script has
    _t, opened = await asyncio.wait_for(versions[1], 600)
    version = 1

    def change(line: int, start: int, end: int, new: str) -> float:
        nonlocal version
        version += 1
        versions[version] = loop.create_future()
        t0 = time.perf_counter()
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [
                    lsp.TextDocumentContentChangePartial(
                        range=lsp.Range(lsp.Position(line, start), lsp.Position(line, end)), text=new
                    )
                ],
            )
        )
        return t0

    async def diag_after(t0):
        t1, count = await asyncio.wait_for(versions[version], 600)
        return t1 - t0, count

    col = lines[tile].index("[4, 8, 32]") + 1
    current = "4"

    def flip() -> float:
        nonlocal current
        current = "8" if current == "4" else "4"
        return change(tile, col, col + 1, current)

    for _ in range(4):  # warm up (imports, caches)
        await diag_after(flip())

    out: dict[str, list] = {"valid": [], "broken": [], "completion": [], "hover": []}
    for _ in range(n):
        dt, count = await diag_after(flip())
        assert count == opened, "a valid edit must leave the script's diagnostics as they were"
        out["valid"].append(dt)
    close = len(lines[split_line]) - 1
    for _ in range(max(1, n // 2)):
        dt, count = await diag_after(change(split_line, close, close + 1, ""))  # drop the closing parenthesis
        assert count > opened
        out["broken"].append(dt)
        dt, count = await diag_after(change(split_line, close, close, ")"))
        assert count == opened
        out["broken"].append(dt)
    arg = lines[split_line].index("split(") + len("split(")
    for _ in range(n):
        flip()
        t0 = time.perf_counter()
        got = await client.text_document_completion_async(lsp.CompletionParams(ident, lsp.Position(split_line, arg)))
        out["completion"].append(time.perf_counter() - t0)
        assert len(got.items) > min(50, split_line // 2), len(got.items)  # the names in scope there, and more
        await diag_after(t0)  # let the server settle before the next keystroke
    hover_col = lines[var_line].index("(") + 1
    for _ in range(n):
        flip()
        t0 = time.perf_counter()
        h = await client.text_document_hover_async(lsp.HoverParams(ident, lsp.Position(var_line, hover_col)))
        out["hover"].append(time.perf_counter() - t0)
        assert h is not None
        await diag_after(t0)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    out["lines"] = len(lines)
    return out


ROWS = (
    ("valid", "diagnostics after a keystroke (valid edit)"),
    ("broken", "diagnostics after a keystroke (break/repair)"),
    ("completion", "completion right after a keystroke"),
    ("hover", "hover right after a keystroke"),
)


def report(size: int, now: dict, base) -> dict:
    print(f"\n{size}-instruction script ({now['lines']} lines), debounceMs={DEBOUNCE_MS}")
    head = f"  {'':<46} {'this version p50/p95 (ms)':>27}"
    print(head + (f" {'baseline p50/p95 (ms)':>24} {'p95 ratio':>10}" if base else ""))
    p95 = {}
    for key, title in ROWS:
        ms = [x * 1000 for x in now[key]]
        p95[key] = pct(ms, 95)
        line = f"  {title:<46} {statistics.median(ms):12.1f} / {p95[key]:8.1f}  "
        if base:
            bms = [x * 1000 for x in base[key]]
            line += f" {statistics.median(bms):11.1f} / {pct(bms, 95):8.1f}  {pct(bms, 95) / p95[key]:8.1f}x"
        print(line)
    return p95


async def main(a):
    baseline = Path(a.baseline).resolve() if a.baseline else None
    print(f"dragon-lsp over stdio; this version: {ROOT}" + (f"; baseline: {baseline}" if baseline else ""))
    print(f"samples: {a.n} per row (this version), {a.baseline_n} (baseline); break/repair rows: twice half as many")
    print(
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start "
        "(both versions run in the same conditions; absolute figures scale with the load)"
    )
    goals = []
    for size in a.sizes:
        now = await measure(size, a.n)
        base = await measure(size, a.baseline_n, env=shim(baseline), cwd=str(baseline)) if baseline else None
        p95 = report(size, now, base)
        if now["lines"] >= 10000:
            goals.append(("completion p95 < 100 ms", p95["completion"] < 100))
            goals.append(("diagnostics p95 < 500 ms", max(p95["valid"], p95["broken"]) < 500))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    for what, ok in goals:
        print(f"goal on 10k lines, {what}: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000], help="instructions (~ lines) per script")
    ap.add_argument("--n", type=int, default=40, help="samples per row for this version")
    ap.add_argument("--baseline", help="a checkout of the version to compare with (e.g. a git worktree of 4772f13)")
    ap.add_argument("--baseline-n", type=int, default=12, help="samples per row for the baseline")
    asyncio.run(main(ap.parse_args()))

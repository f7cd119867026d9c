"""Measure latency, time on save and validated suggestions on the real measurement engine (CPU, llvm).

Skipped when the engine's dependencies (the `[tvm]` extra: TVM and numpy) are not installed: these
are the only tests of the language server that need them. Installed but failing to import is an
error, not a skip.
"""

from __future__ import annotations

import asyncio
import importlib.util

import pytest
from lsprotocol import types as lsp

from tests.lsp.helpers import SCRIPT, command, diagnostics_for, open_doc, workspace

MISSING = [m for m in ("tvm", "numpy") if importlib.util.find_spec(m) is None]
if MISSING:
    pytest.skip(
        f"{', '.join(MISSING)} not installed (the [tvm] extra): no build/verify/time here", allow_module_level=True
    )

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_measure_latency_on_the_engine(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    r = await command(client, "dragon.measureLatency", uri)
    assert "error" not in r, r
    assert (
        r["message"].startswith("sched.dragon (llvm, device local): median latency ")
        and "x vs unscheduled" in r["message"]
    )
    assert r["figures"]["latency_us"] > 0
    diags = await diagnostics_for(client, uri, 1, where=lambda ds: any(d.code == "DRG706" for d in ds))
    d = next(d for d in diags if d.code == "DRG706")
    assert d.severity == lsp.DiagnosticSeverity.Information and r["message"].endswith(d.message)


async def test_time_on_save_publishes_the_latency(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"dragon": {"checkOnSave": "time"}})
    )
    await asyncio.sleep(0.2)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    diags = await diagnostics_for(client, uri, 1, timeout=240, where=lambda ds: any(d.code == "DRG706" for d in ds))
    d = next(d for d in diags if d.code == "DRG706")
    assert d.severity == lsp.DiagnosticSeverity.Information and "median latency" in d.message
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"dragon": {"checkOnSave": "off"}})
    )


async def test_validated_suggestion(client, tmp_path):
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(
            # a 4-trial search and the validation of its answer: the default 120 s limit is the user's
            # budget, not what this test checks (a loaded 2-core machine went past it)
            settings={
                "dragon": {"suggest": {"trials": 4, "candidates": 1, "builder": "auto"}, "timeouts": {"suggest": 600}}
            }
        )
    )
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    r = await command(client, "dragon.suggestSchedule", uri)
    assert "error" not in r, r
    assert r["suggestions"], "no candidate passed the engine"
    s = r["suggestions"][0]
    assert s["figures"]["latency_us"] > 0 and " us" in s["title"] and "vs unscheduled" in s["title"]
    assert r["content"] == s["text"] and r["language"] == "dragon"

"""'Suggest a schedule' and 'Rewrite this schedule' end to end, with a stand-in engine.

The server runs with tests/lsp/stub_engine on PYTHONPATH: its `dragon_dsl.engine` passes every
candidate with a latency derived from the trace, so these tests cover the pipeline (search,
decode, validation through the engine's API, progress, titles, code actions, cancellation)
quickly and without a device. test_measure.py runs the same path on the real engine.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from dragon_dsl import check_text
from tests.lsp.conftest import make_client, start
from tests.lsp.helpers import SCRIPT, SERVER, actions_at, apply_edits, diagnostics_for, open_doc, pos, workspace

pytestmark = pytest.mark.asyncio(loop_scope="module")

STUB = str(Path(__file__).parent / "stub_engine")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([STUB, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
FAST = {"suggest": {"trials": 4, "candidates": 2, "builder": "in-process"}}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client, server_env=ENV),
                    scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client, FAST, FAST)
    yield
    await lsp_client.shutdown_session()


async def test_suggest_offers_validated_schedules(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    r = await client.workspace_execute_command_async(lsp.ExecuteCommandParams("dragon.suggest", [uri, "suggest"]))
    assert "error" not in r, r
    assert r["source"] == "search" and 1 <= len(r["suggestions"]) <= 2
    best = r["suggestions"][0]
    assert best["title"].startswith("Use suggested schedule (search): ")
    assert f"{best['figures']['latency_us']:.1f} us" in best["title"] and "x vs unscheduled" in best["title"]
    lats = [s["figures"]["latency_us"] for s in r["suggestions"]]
    assert lats == sorted(lats)
    # progress: begin, reports, end on one server-created token
    token, reports = next((t, v) for t, v in client.progress_reports.items() if str(t).startswith("dragon-"))
    assert reports[0].kind == "begin" and reports[0].cancellable and reports[-1].kind == "end"
    assert any(getattr(x, "message", "") and "searching" in x.message for x in reports)
    # the validated schedule is now a code action whose edit replaces the script
    acts = await actions_at(client, uri, lsp.Range(pos(0, 0), pos(0, 0)))
    offered = [a for a in acts if a.title == best["title"]]
    assert offered and offered[0].edit is not None
    new = apply_edits(SCRIPT, offered[0].edit.changes[uri])
    assert new.startswith('workload "matmul_64.tvmscript"\ntarget "llvm"\n')
    program, diags = check_text(new)
    assert not [d for d in diags if d.severity.value == "error"] and len(program.instructions) > 5


async def test_rewrite_offers_only_faster_schedules(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    r = await client.workspace_execute_command_async(lsp.ExecuteCommandParams("dragon.suggest", [uri, "rewrite"]))
    assert "error" not in r, r
    for s in r["suggestions"]:
        assert s["title"].startswith("Rewrite (search): ") and "faster than now" in s["title"]


async def test_suggestions_for_an_old_version_are_not_offered(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    r = await client.workspace_execute_command_async(lsp.ExecuteCommandParams("dragon.suggest", [uri, "suggest"]))
    assert r["suggestions"]
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [lsp.TextDocumentContentChangeWholeDocument(text=SCRIPT + "\n")]))
    await diagnostics_for(client, uri, 2)
    acts = await actions_at(client, uri, lsp.Range(pos(0, 0), pos(0, 0)))
    assert not [a for a in acts if a.title.startswith("Use suggested schedule")]


async def test_suggest_can_be_cancelled(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    before = set(client.progress_reports)
    request = asyncio.ensure_future(client.workspace_execute_command_async(
        lsp.ExecuteCommandParams("dragon.suggest", [uri, "suggest"])))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not (set(client.progress_reports) - before) and loop.time() < deadline:
        await asyncio.sleep(0.02)
    (token,) = set(client.progress_reports) - before
    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    r = await asyncio.wait_for(request, 30)
    assert r["cancelled"] and r["suggestions"] == []
    assert client.progress_reports[token][-1].kind == "end"
    status = await client.workspace_execute_command_async(lsp.ExecuteCommandParams("dragon.status", []))
    assert status["measure_worker"] is None  # the search was stopped with its worker
    assert status["internal_errors"] == 0
    # the server goes on
    h = await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(uri), pos(5, 13)))
    assert h is not None

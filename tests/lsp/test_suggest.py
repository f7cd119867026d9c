"""The commands that go through the measurement engine, end to end with a stand-in engine:
Suggest schedule, Rewrite schedule and Measure latency.

The server runs with tests/lsp/stub_engine on PYTHONPATH: its `dragon_dsl.engine` passes every
candidate with a latency derived from the trace, so these tests cover the pipeline (search,
decode, validation through the engine's API, answers, applied edits, progress, titles, code
actions, cancellation, per-request settings) quickly and without a device. test_measure.py runs
the same paths on the real engine.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from dragon_dsl import check_text
from tests.lsp.conftest import make_client, start
from tests.lsp.helpers import (
    SCRIPT,
    SERVER,
    actions_at,
    apply_edits,
    command,
    diagnostics_for,
    open_doc,
    pos,
    status,
    workspace,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

STUB = str(Path(__file__).parent / "stub_engine")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([STUB, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
FAST = {"suggest": {"trials": 4, "candidates": 2, "builder": "in-process"}}
#: A schedule the stand-in engine times at 500 us: every candidate of the search is faster.
SLOW = SCRIPT.replace("vectorize(l11)\n", 'vectorize(l11)\nannotate(b0, "stub.slow", 1)\n')


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER, client_factory=make_client, server_env=ENV), scope="module"
)
async def client(lsp_client: LanguageClient):
    await start(lsp_client, FAST, FAST)
    yield
    await lsp_client.shutdown_session()


async def test_suggest_offers_validated_schedules(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    before = set(client.progress_reports)
    r = await command(client, "dragon.suggestSchedule", uri)
    assert "error" not in r, r
    assert r["source"] == "search" and 1 <= len(r["suggestions"]) <= 2
    best = r["suggestions"][0]
    assert best["title"].startswith("Use suggested schedule (search): ")
    assert f"{best['figures']['latency_us']:.1f} us" in best["title"] and "x vs unscheduled" in best["title"]
    lats = [s["figures"]["latency_us"] for s in r["suggestions"]]
    assert lats == sorted(lats)
    # the answer opens the fastest schedule beside the script and says what it is
    assert r["language"] == "dragon" and r["content"] == best["text"]
    assert r["message"].startswith(best["title"] + ".") and "code action" in r["message"]
    assert not client.applied  # a suggestion never edits the script by itself
    # progress: begin, reports, end on one server-created token
    (token,) = set(client.progress_reports) - before
    reports = client.progress_reports[token]
    assert str(token).startswith("dragon-") and reports[0].title == "Suggesting a schedule"
    assert reports[0].kind == "begin" and reports[0].cancellable and reports[-1].kind == "end"
    assert any(getattr(x, "message", "") and "searching" in x.message for x in reports)
    # the validated schedule is now a code action whose edit replaces the script
    acts = await actions_at(client, uri, lsp.Range(pos(0, 0), pos(0, 0)))
    offered = [a for a in acts if a.title == best["title"]]
    assert offered and offered[0].edit is not None
    new = apply_edits(SCRIPT, offered[0].edit.changes[uri])
    assert new == best["text"] and new.startswith('workload "matmul_64.tvmscript"\ntarget "llvm"\n')
    program, diags = check_text(new)
    assert not [d for d in diags if d.severity.value == "error"] and len(program.instructions) > 5


async def test_rewrite_applies_the_fastest_faster_schedule(client, tmp_path):
    uri = workspace(tmp_path, SLOW)
    open_doc(client, uri, SLOW)
    await diagnostics_for(client, uri, 1)
    client.applied.clear()
    r = await command(
        client,
        "dragon.rewriteSchedule",
        uri,
        prompt="stage A in a cache",
        range={"start": {"line": 5, "character": 0}, "end": {"line": 8, "character": 3}},
    )
    assert "error" not in r, r
    for s in r["suggestions"]:
        assert s["title"].startswith("Rewrite (search): ") and "faster than now" in s["title"]
    assert r["suggestions"], r
    best = r["suggestions"][0]
    assert r["applied"] and "content" not in r and r["message"].startswith(best["title"] + ": applied.")
    assert "follows no request" in r["message"]  # the search ignores the prompt and the selection, and says so
    (edit,) = client.applied
    (change,) = edit.document_changes  # versioned: the version the rewrite was computed for
    assert change.text_document.uri == uri and change.text_document.version == 1
    assert apply_edits(SLOW, change.edits) == best["text"]


async def test_rewrite_opens_beside_when_the_editor_declines(client, tmp_path):
    uri = workspace(tmp_path, SLOW)
    open_doc(client, uri, SLOW)
    await diagnostics_for(client, uri, 1)
    client.apply_answer = False
    try:
        r = await command(client, "dragon.rewriteSchedule", uri)
    finally:
        client.apply_answer = True
    assert r["suggestions"], r
    assert not r["applied"] and r["content"] == r["suggestions"][0]["text"] and r["language"] == "dragon"
    assert "Not applied (the editor did not apply the edit)" in r["message"]
    assert "code action" in r["message"]  # the version did not change: still offered


async def test_suggestions_for_an_old_version_are_not_offered(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    r = await command(client, "dragon.suggestSchedule", uri)
    assert r["suggestions"]
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [lsp.TextDocumentContentChangeWholeDocument(text=SCRIPT + "\n")],
        )
    )
    await diagnostics_for(client, uri, 2)
    acts = await actions_at(client, uri, lsp.Range(pos(0, 0), pos(0, 0)))
    assert not [a for a in acts if a.title.startswith("Use suggested schedule")]


async def test_suggest_can_be_cancelled(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    before = set(client.progress_reports)
    request = asyncio.ensure_future(command(client, "dragon.suggestSchedule", uri))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not (set(client.progress_reports) - before) and loop.time() < deadline:
        await asyncio.sleep(0.02)
    (token,) = set(client.progress_reports) - before
    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    r = await asyncio.wait_for(request, 30)
    assert r == {"message": "Suggesting a schedule: cancelled", "cancelled": True}
    assert client.progress_reports[token][-1].kind == "end"
    state = await status(client)
    assert state["measure_worker"] is None  # the search was stopped with its worker
    assert state["internal_errors"] == 0
    # the server goes on
    h = await client.text_document_hover_async(lsp.HoverParams(lsp.TextDocumentIdentifier(uri), pos(5, 13)))
    assert h is not None


async def test_cancel_request_stops_the_worker(client, tmp_path):
    """VS Code's cancel button sends $/cancelRequest; progress goes to the token the request carries."""
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    client.progress_reports.setdefault("vscode-1", [])
    arg = {"uri": uri, "version": 1, "target": "", "device": "", "trackerAddress": ""}
    request = asyncio.ensure_future(
        client.protocol.send_request_async(
            lsp.WORKSPACE_EXECUTE_COMMAND,
            lsp.ExecuteCommandParams("dragon.suggestSchedule", [arg], work_done_token="vscode-1"),
            msg_id="suggest-1",
        )
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not client.progress_reports["vscode-1"] and loop.time() < deadline:
        await asyncio.sleep(0.02)
    assert client.progress_reports["vscode-1"][0].kind == "begin"
    client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="suggest-1"))
    with pytest.raises(JsonRpcException, match="cancel"):
        await asyncio.wait_for(request, 30)
    for _ in range(500):
        state = await status(client)
        if state["measure_worker"] is None:
            break
        await asyncio.sleep(0.02)
    assert state["measure_worker"] is None and state["internal_errors"] == 0
    assert client.progress_reports["vscode-1"][-1].kind == "end"


async def test_measure_latency(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    client.progress_reports.setdefault("m-1", [])
    r = await command(client, "dragon.measureLatency", uri, token="m-1")
    assert set(r) == {"message", "figures"}, r
    lat = r["figures"]["latency_us"]
    assert r["message"] == (
        f"sched.dragon (llvm, device local): median latency {lat:.3f} us; "
        f"{1000 / lat:.2f}x vs unscheduled (1000.000 us)"
    )
    assert [p.kind for p in client.progress_reports["m-1"]] == ["begin", "end"]
    # published as check-on-save publishes it: an information on the target line
    diags = await diagnostics_for(client, uri, 1, where=lambda ds: any(d.code == "DRG706" for d in ds))
    d = next(d for d in diags if d.code == "DRG706")
    assert d.severity == lsp.DiagnosticSeverity.Information and d.range.start.line == 2
    assert r["message"].endswith(d.message)


async def test_measure_latency_takes_the_requests_settings(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    r = await command(client, "dragon.measureLatency", uri, device="rpc", trackerAddress="10.0.0.5:9190/h100")
    assert "(llvm, device rpc://10.0.0.5:9190/h100)" in r["message"], r
    r = await command(client, "dragon.measureLatency", uri, trackerAddress="10.0.0.5:9190")
    assert "(llvm, device rpc://10.0.0.5:9190/dragon)" in r["message"], r
    r = await command(client, "dragon.measureLatency", uri, device="cpu", target="nvidia/nvidia-h100")
    assert "(llvm, device local)" in r["message"], r
    r = await command(client, "dragon.measureLatency", uri, trackerAddress="10.0.0.5")
    assert r == {"error": "dragon.trackerAddress: '10.0.0.5': expects HOST:PORT or HOST:PORT/KEY"}


async def test_measure_latency_says_why_not(client, tmp_path):
    text = SCRIPT.replace("vectorize(l11)", "vectorize(l1)")
    uri = workspace(tmp_path, text)
    open_doc(client, uri, text)
    await diagnostics_for(client, uri, 1)
    r = await command(client, "dragon.measureLatency", uri)
    assert set(r) == {"error"} and r["error"].startswith("DRG601 (line 12): "), r
    text = SCRIPT.replace("l11, l3)", "l11, l99)")
    uri = workspace(tmp_path / "b", text)
    open_doc(client, uri, text)
    await diagnostics_for(client, uri, 1)
    r = await command(client, "dragon.measureLatency", uri)
    assert set(r) == {"error"} and r["error"].startswith("the script has errors: DRG101 (line 11): "), r

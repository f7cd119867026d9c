"""Shared pieces of the language server tests: scripts, documents, a client that waits."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

from lsprotocol import types as lsp

DATA = Path(__file__).resolve().parents[1] / "data"
SERVER = [sys.executable, "-m", "dragon_lsp"]

#: A schedule TVM builds for a GPU (threads bound): its CUDA source needs no GPU.
GPU_SCRIPT = """\
workload "matmul_64.tvmscript"
target "nvidia/nvidia-h100"

b0 = get_sblock("C")
l1, l2, l3 = get_loops(b0)
l4 = fuse(l1, l2)
l5, l6 = split(l4, [None, 128])
bind(l5, "blockIdx.x")
bind(l6, "threadIdx.x")
"""

SCRIPT = """\
# matmul 64: tile i and j
workload "matmul_64.tvmscript"
target "llvm"

b0 = get_sblock("C")
l1, l2, l3 = get_loops(b0)
tile_i: v4, v5 = sample_perfect_tile(l1, n=2, max_innermost_factor=16, decision=[8, 8])
l6, l7 = split(l1, [v4, v5])
v8, v9 = sample_perfect_tile(l2, n=2, max_innermost_factor=16)
l10, l11 = split(l2, [v8, v9])
reorder(l6, l10, l7, l11, l3)
vectorize(l11)

explain:
f1 = fact("C is a 64x64x64 matmul", about=[b0])
r1 = rationale("tile i by 8 so a row block stays in cache", because=[f1], produces=[tile_i])
e1 = effect("fewer cache misses on A", of=[r1])
"""


def workspace(tmp: Path, text: str = SCRIPT, name: str = "sched.dragon", workload: str = "matmul_64") -> str:
    """Write the workload beside a script file; return the script's URI."""
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / "workloads" / f"{workload}.tvmscript", tmp / f"{workload}.tvmscript")
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path.as_uri()


def capabilities() -> lsp.ClientCapabilities:
    return lsp.ClientCapabilities(
        general=lsp.GeneralClientCapabilities(position_encodings=[lsp.PositionEncodingKind.Utf16]),
        text_document=lsp.TextDocumentClientCapabilities(
            completion=lsp.CompletionClientCapabilities(
                completion_item=lsp.ClientCompletionItemOptions(
                    snippet_support=True, documentation_format=[lsp.MarkupKind.Markdown]
                )
            ),
            hover=lsp.HoverClientCapabilities(content_format=[lsp.MarkupKind.Markdown]),
            signature_help=lsp.SignatureHelpClientCapabilities(
                signature_information=lsp.ClientSignatureInformationOptions(
                    documentation_format=[lsp.MarkupKind.Markdown]
                )
            ),
            synchronization=lsp.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(related_information=True),
            rename=lsp.RenameClientCapabilities(prepare_support=True),
        ),
        window=lsp.WindowClientCapabilities(work_done_progress=True),
        workspace=lsp.WorkspaceClientCapabilities(
            configuration=True,
            inlay_hint=lsp.InlayHintWorkspaceClientCapabilities(refresh_support=False),
            apply_edit=True,
            workspace_edit=lsp.WorkspaceEditClientCapabilities(document_changes=True),
        ),
    )


async def command(client, name: str, uri: str, version: int | None = 1, token=None, **fields):
    """`workspace/executeCommand` as the VS Code extension sends it: one argument object with the
    document, its version and the settings (empty: unset), plus `fields` (range, prompt, overrides)."""
    arg = {"uri": uri, "version": version, "target": "", "device": "", "trackerAddress": "", **fields}
    return await client.workspace_execute_command_async(lsp.ExecuteCommandParams(name, [arg], work_done_token=token))


async def status(client) -> dict:
    """The server's state (`dragon/status`): documents, workers, internal errors, settings."""
    return _plain(await client.protocol.send_request_async("dragon/status", None))


def _plain(obj):
    """pygls answers a custom request with named tuples: turn them into dicts."""
    if hasattr(obj, "_asdict"):
        return {k: _plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def open_doc(client, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri=uri, language_id="dragon", version=version, text=text))
    )


def change_doc(client, uri: str, version: int, text: str, rng: lsp.Range | None = None) -> None:
    change = (
        lsp.TextDocumentContentChangeWholeDocument(text=text)
        if rng is None
        else lsp.TextDocumentContentChangePartial(range=rng, text=text)
    )
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(lsp.VersionedTextDocumentIdentifier(uri=uri, version=version), [change])
    )


async def diagnostics_for(client, uri: str, version: int, timeout: float = 20.0, where=None):
    """Wait until diagnostics for `uri` at `version` arrive (and satisfy `where`), return them."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = client.diagnostics.get(uri)
        ver = client.versions.get(uri) if hasattr(client, "versions") else None
        if got is not None and (ver is None or ver == version) and (where is None or where(got)):
            return got
        if loop.time() > deadline:
            raise AssertionError(f"no diagnostics for {uri} v{version}; last: {got}")
        await asyncio.sleep(0.02)


def pos(line: int, character: int) -> lsp.Position:
    """0-based, as LSP counts."""
    return lsp.Position(line=line, character=character)


def find(text: str, needle: str, nth: int = 0, offset: int = 0) -> lsp.Position:
    """The LSP position (UTF-16) of the nth occurrence of needle in text, plus offset characters."""
    i = -1
    for _ in range(nth + 1):
        i = text.index(needle, i + 1)
    i += offset
    line = text.count("\n", 0, i)
    start = text.rfind("\n", 0, i) + 1
    return pos(line, len(text[start:i].encode("utf-16-le")) // 2)


async def actions_at(client, uri, rng, diags=()):
    return await client.text_document_code_action_async(
        lsp.CodeActionParams(lsp.TextDocumentIdentifier(uri), rng, lsp.CodeActionContext(diagnostics=list(diags)))
    )


def apply_edits(text: str, edits) -> str:
    """Apply LSP text edits (UTF-16 positions) to text, last first."""
    lines = text.split("\n")

    def offset(p):
        before = sum(len(line) + 1 for line in lines[: p.line])
        line = lines[p.line] if p.line < len(lines) else ""
        units, i = 0, 0
        while i < len(line) and units < p.character:
            units += 2 if ord(line[i]) > 0xFFFF else 1
            i += 1
        return before + i

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(e.range.start)] + e.new_text + text[offset(e.range.end) :]
        lines = text.split("\n")
    return text

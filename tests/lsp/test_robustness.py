"""A client that sends what the protocol does not allow gets an answer, at once, and the server goes on.

1. Requests whose params do not fit their method (a missing field, a negative or a string
   position, a wrong type anywhere) are answered with JSON-RPC error -32602 within a second,
   for every request the server handles; a notification with bad params is dropped.
2. A message whose header cannot be read costs that message only: the server finds the next
   header and answers what follows, shutdown included (raw bytes over a real stdio pipe).
"""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import threading
import time
import uuid
from concurrent.futures import Future

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.lsp.conftest import CONFIG, start
from tests.lsp.helpers import SCRIPT, SERVER, find, open_doc, status

aio = pytest.mark.asyncio(loop_scope="module")
INVALID_PARAMS = -32602
DOC = "file:///robust/sched.dragon"
POS = {"line": 5, "character": 4}
RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}
TD = {"uri": DOC}

#: Every request the server handles, with params that fit (to show the same method answers them).
REQUESTS = {
    "textDocument/hover": {"textDocument": TD, "position": POS},
    "textDocument/definition": {"textDocument": TD, "position": POS},
    "textDocument/references": {"textDocument": TD, "position": POS, "context": {"includeDeclaration": True}},
    "textDocument/prepareRename": {"textDocument": TD, "position": POS},
    "textDocument/rename": {"textDocument": TD, "position": POS, "newName": "blk"},
    "textDocument/completion": {"textDocument": TD, "position": POS},
    "textDocument/signatureHelp": {"textDocument": TD, "position": POS},
    "textDocument/semanticTokens/full": {"textDocument": TD},
    "textDocument/semanticTokens/range": {"textDocument": TD, "range": RANGE},
    "textDocument/documentSymbol": {"textDocument": TD},
    "textDocument/inlayHint": {"textDocument": TD, "range": RANGE},
    "textDocument/codeAction": {"textDocument": TD, "range": RANGE, "context": {"diagnostics": []}},
    "textDocument/formatting": {"textDocument": TD, "options": {"tabSize": 4, "insertSpaces": True}},
    "textDocument/rangeFormatting": {
        "textDocument": TD,
        "range": RANGE,
        "options": {"tabSize": 4, "insertSpaces": True},
    },
    "workspace/executeCommand": {"command": "dragon.showTensorIR", "arguments": [{"uri": "file:///not/open.dragon"}]},
}


async def raw_request(client, method: str, params, timeout: float = 1.0) -> object:
    """Send a request exactly as given (no client-side typing); the answer, or raise its JSON-RPC error."""
    msg_id = str(uuid.uuid4())
    future: Future = Future()
    client.protocol._request_futures[msg_id] = future
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wait_for(asyncio.wrap_future(future), timeout=timeout)


async def refused(client, method: str, params) -> JsonRpcException:
    t0 = time.perf_counter()
    with pytest.raises(JsonRpcException) as info:
        await raw_request(client, method, params)
    assert time.perf_counter() - t0 < 1.0
    assert info.value.code == INVALID_PARAMS, (method, params, info.value)
    return info.value


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    open_doc(lsp_client, DOC, SCRIPT)
    yield
    await lsp_client.shutdown_session()


@aio
async def test_the_reproducers_are_answered_with_invalid_params(client):
    await refused(client, "textDocument/hover", {"foo": 1})
    await refused(client, "textDocument/hover", {"textDocument": TD, "position": {"line": -1, "character": 0}})
    e = await refused(client, "textDocument/hover", {"textDocument": TD, "position": {"line": "3", "character": 0}})
    assert "position" in e.message
    e = await refused(client, "textDocument/definition", {"textDocument": TD})
    assert "position" in e.message and "missing" in e.message
    await refused(client, "textDocument/completion", {"textDocument": {"uri": 5}, "position": POS})


@aio
@pytest.mark.parametrize("method", sorted(REQUESTS))
async def test_every_request_refuses_params_that_do_not_fit(client, method):
    await refused(client, method, {"foo": 1})
    await refused(client, method, [1, 2])
    good = REQUESTS[method]
    if "position" in good:
        await refused(client, method, {**good, "position": {"line": 0, "character": -3}})
    await raw_request(client, method, good, timeout=30)  # the same method answers params that fit


@aio
async def test_the_server_goes_on_after_bad_params(client):
    # notifications with bad params: dropped (there is nothing to answer)
    client.protocol._send_data({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"foo": 1}})
    client.protocol._send_data({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": [1]})
    for _ in range(3):
        await refused(client, "textDocument/hover", {"foo": 1})
    got = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(DOC), find(SCRIPT, "split(l1"))
    )
    assert got is not None and "split" in got.contents.value
    assert (await status(client))["internal_errors"] == 0


# ---- framing: raw bytes over stdio --------------------------------------------------------------


def frame(obj, header: str = "Content-Length") -> bytes:
    body = json.dumps(obj).encode()
    return f"{header}: {len(body)}\r\n\r\n".encode() + body


class RawServer:
    """The server as a subprocess; a thread reads its framed answers into a queue."""

    def __init__(self):
        self.proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.messages.put(json.loads(out.read(length)))

    def send(self, data: bytes):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def answer(self, msg_id, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            msg = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            if msg.get("id") == msg_id and "method" not in msg:
                return msg


def _initialize(msg_id=1):
    return {
        "jsonrpc": "2.0",
        "id": msg_id,
        "method": "initialize",
        "params": {"processId": None, "rootUri": None, "capabilities": {}},
    }


@pytest.mark.parametrize("bad_header", ["Content-Lenght", "Content-Length: x", "Contnet-Length", "X-Garbage"])
def test_a_bad_header_costs_one_message(bad_header):
    server = RawServer()
    try:
        server.send(frame(_initialize()))
        assert "result" in server.answer(1)
        server.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        status_req = {"jsonrpc": "2.0", "id": 3, "method": "dragon/status", "params": None}
        # the misspelt message, then one whose header is fine: the second is answered
        server.send(frame({"jsonrpc": "2.0", "id": 2, "method": "dragon/status", "params": None}, bad_header))
        server.send(frame(status_req))
        assert server.answer(3)["result"]["documents"] == 0
        # garbage between messages too
        server.send(b"}}not a header\r\n\r\n" + frame({**status_req, "id": 4}))
        assert "result" in server.answer(4)
        # header names in any case, spaces around the number
        body = json.dumps({**status_req, "id": 5}).encode()
        server.send(
            b"content-length :  %d \r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(body)
            + body
        )
        assert "result" in server.answer(5)
        server.send(frame({"jsonrpc": "2.0", "id": 6, "method": "shutdown", "params": None}))
        assert "error" not in server.answer(6)
        server.send(frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
        assert server.proc.wait(timeout=30) == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()

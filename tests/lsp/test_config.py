"""Configuration (initialization options, workspace/configuration, didChangeConfiguration) and TCP mode."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import make_client
from tests.lsp.helpers import SERVER, capabilities

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client), scope="module")
async def client(lsp_client: LanguageClient):
    # what the client answers to workspace/configuration wins over the initialization options
    lsp_client.set_configuration({"device": "rpc", "tracker": "10.0.0.5:9190", "rpcKey": "h100",
                                  "timeouts": {"build": 30}, "suggest": {"trials": 8}}, section="dragon")
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=capabilities(), initialization_options={"dragon": {
            "target": "nvidia/nvidia-h100", "device": "local", "modelPath": "/models/dragon.pt",
            "checkOnSave": "build", "debounceMs": "fast"}}))
    yield
    await lsp_client.shutdown_session()


async def status(client):
    return await client.workspace_execute_command_async(lsp.ExecuteCommandParams("dragon.status", []))


async def test_initialization_options_then_workspace_configuration(client):
    for _ in range(100):
        s = await status(client)
        if s["settings"]["device"].startswith("rpc://"):
            break
        await asyncio.sleep(0.05)
    assert s["settings"]["target"] == "nvidia/nvidia-h100"        # from initializationOptions
    assert s["settings"]["modelPath"] == "/models/dragon.pt"
    assert s["settings"]["checkOnSave"] == "build"
    assert s["settings"]["device"] == "rpc://10.0.0.5:9190/h100"  # from workspace/configuration
    assert s["settings"]["trials"] == 8
    assert s["encoding"] == "utf-16"
    # a bad value is ignored, with a message saying which
    assert any("dragon.debounceMs" in m.message for m in client.log_messages)


async def test_did_change_configuration(client):
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"dragon": {"device": "cpu", "checkOnSave": "off"}}))
    for _ in range(100):
        s = await status(client)
        if s["settings"]["checkOnSave"] == "off":
            break
        await asyncio.sleep(0.05)
    assert s["settings"]["device"] == "local" and s["settings"]["checkOnSave"] == "off"
    # without settings in the notification, the server pulls workspace/configuration again
    client.set_configuration({"checkOnSave": "time"}, section="dragon")
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    for _ in range(100):
        s = await status(client)
        if s["settings"]["checkOnSave"] == "time":
            break
        await asyncio.sleep(0.05)
    assert s["settings"]["checkOnSave"] == "time"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _frame(obj) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def _read(reader) -> dict:
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(await reader.readexactly(length))


async def test_tcp_mode():
    port = _free_port()
    proc = subprocess.Popen(SERVER + ["--tcp", "--port", str(port)], stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.05)
        writer.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                             "params": {"processId": None, "rootUri": None, "capabilities": {}}}))
        await writer.drain()
        answer = await asyncio.wait_for(_read(reader), 30)
        caps = answer["result"]["capabilities"]
        assert caps["hoverProvider"] and caps["completionProvider"]["triggerCharacters"]
        assert caps["positionEncoding"] == "utf-16"
        assert answer["result"]["serverInfo"]["name"] == "dragon-lsp"
        writer.close()
    finally:
        proc.kill()
        proc.wait()


def test_stdio_flags():
    out = subprocess.run(SERVER + ["--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("dragon-lsp ")

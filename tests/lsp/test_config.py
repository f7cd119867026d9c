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
from tests.lsp.helpers import SERVER, capabilities, status

pytestmark = pytest.mark.asyncio(loop_scope="module")


#: The `dragon` section as the VS Code extension sends it (with its own keys, which the server ignores).
CLIENT_SECTION = {
    "pythonPath": "/opt/venv/bin/python",
    "serverPath": "",
    "serverArgs": [],
    "trace": {"server": "off"},
    "target": "",
    "device": "rpc",
    "trackerAddress": "10.0.0.5:9190/h100",
    "modelPath": "",
    "timeouts": {"replay": 30, "build": 30, "measure": 90, "suggest": 120},
}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client), scope="module")
async def client(lsp_client: LanguageClient):
    # what the client answers to workspace/configuration wins over the initialization options
    lsp_client.set_configuration(dict(CLIENT_SECTION, target="", suggest={"trials": 8}), section="dragon")
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=capabilities(),
            initialization_options={
                "settings": {
                    "target": "nvidia/nvidia-h100",
                    "device": "local",
                    "trackerAddress": "",
                    "modelPath": "/models/dragon.pt",
                    "timeouts": {"replay": 5, "build": 120, "measure": 300, "suggest": 120},
                    "checkOnSave": "build",
                    "debounceMs": "fast",
                    "tracker": "10.0.0.9:9190",
                }
            },
        )
    )
    yield
    await lsp_client.shutdown_session()


async def settings_when(client, ready):
    for _ in range(200):
        s = (await status(client))["settings"]
        if ready(s):
            return s
        await asyncio.sleep(0.05)
    raise AssertionError(f"settings never became ready: {s}")


async def test_initialization_options_then_workspace_configuration(client):
    s = await settings_when(client, lambda s: s["engineDevice"].startswith("rpc://"))
    assert s["checkOnSave"] == "build"  # from initializationOptions.settings only
    assert s["modelPath"] == "" and s["target"] is None  # "" in workspace/configuration: unset, over
    # the initialization options' values
    assert s["device"] == "rpc" and s["trackerAddress"] == "10.0.0.5:9190/h100"
    assert s["engineDevice"] == "rpc://10.0.0.5:9190/h100"  # from workspace/configuration
    assert s["timeouts"] == {"replay": 30, "build": 30, "measure": 90, "suggest": 120}
    assert s["suggest"]["trials"] == 8
    assert (await status(client))["encoding"] == "utf-16"
    # a bad value or an unknown key is ignored, with a message saying which; the client's own keys
    # and empty strings are not reported
    messages = [m.message for m in client.log_messages]
    assert any("dragon.debounceMs" in m for m in messages)
    assert any("dragon.tracker: unknown setting" in m for m in messages)
    for quiet in ("pythonPath", "serverPath", "serverArgs", "trace", "trackerAddress", "target", "modelPath"):
        assert not any(f"dragon.{quiet}" in m for m in messages), messages


async def test_did_change_configuration(client):
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"dragon": {"device": "cpu", "checkOnSave": "off"}})
    )
    s = await settings_when(client, lambda s: s["checkOnSave"] == "off")
    assert s["engineDevice"] == "local"
    # automatic device: the tracker when an address is set (key "dragon" when it names none)
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(
            settings={"dragon": dict(CLIENT_SECTION, device="", trackerAddress="gpu-box:9190", modelPath="")}
        )
    )
    s = await settings_when(client, lambda s: s["trackerAddress"] == "gpu-box:9190")
    assert s["engineDevice"] == "rpc://gpu-box:9190/dragon" and s["modelPath"] == ""
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"dragon": dict(CLIENT_SECTION, device="", trackerAddress="")})
    )
    s = await settings_when(client, lambda s: s["trackerAddress"] == "")
    assert s["engineDevice"] == "local"
    # "rpc" with no tracker cannot work: said once, and commands answer why
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={"dragon": {"device": "rpc"}}))
    s = await settings_when(client, lambda s: s["device"] == "rpc")
    assert s["engineDevice"].startswith("invalid: ")
    await settings_when(client, lambda s: any("trackerAddress is empty" in m.message for m in client.log_messages))
    # without settings in the notification, the server pulls workspace/configuration again
    client.set_configuration({"checkOnSave": "time", "device": ""}, section="dragon")
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    s = await settings_when(client, lambda s: s["checkOnSave"] == "time")
    assert s["device"] == ""


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
        writer.write(
            _frame(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"processId": None, "rootUri": None, "capabilities": {}},
                }
            )
        )
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


async def test_stdio_flags():
    out = subprocess.run(SERVER + ["--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("dragon-lsp ")

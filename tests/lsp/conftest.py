"""Fixtures: the real server in a subprocess, driven over stdio by pytest-lsp's client."""

from __future__ import annotations

from typing import Union

import pytest_lsp
from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from tests.lsp.helpers import SERVER, capabilities


def _publish(client: LanguageClient, params: lsp.PublishDiagnosticsParams):
    """pytest-lsp keeps the diagnostics; also keep the version they were computed for."""
    client.versions[params.uri] = params.version
    client.diagnostics[params.uri] = params.diagnostics


def _code_action_or_command(obj, _type):
    """lsprotocol reads any object with a `command` field as a Command, also a CodeAction that
    carries one; a Command's `command` is a string, a CodeAction's an object."""
    conv = _CONVERTER[0]
    if isinstance(obj.get("command"), str):
        return conv.structure(obj, lsp.Command)
    return conv.structure(obj, lsp.CodeAction)


_CONVERTER: list = []


def _converter():
    conv = default_converter()
    conv.register_structure_hook(Union[lsp.Command, lsp.CodeAction], _code_action_or_command)
    _CONVERTER[:] = [conv]
    return conv


def _apply_edit(client: LanguageClient, params: lsp.ApplyWorkspaceEditParams):
    """Keep the edits the server asks for; answer `client.apply_answer` (as an editor would)."""
    client.applied.append(params.edit)
    return lsp.ApplyWorkspaceEditResult(applied=client.apply_answer)


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=_converter)
    client.versions = {}
    client.applied, client.apply_answer = [], True
    register_lsp_features(
        client,
        {
            **DEFAULT_CLIENT_FEATURES,
            lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: _publish,
            lsp.WORKSPACE_APPLY_EDIT: _apply_edit,
        },
    )
    return client


SETTINGS = {"debounceMs": 10, "replayDebounceMs": 50, "checkOnSave": "off"}
CONFIG = ClientServerConfig(server_command=SERVER, client_factory=make_client)


async def start(client: LanguageClient, settings=None, init=None) -> None:
    client.set_configuration(dict(SETTINGS, **(settings or {})), section="dragon")
    client.init_result = await client.initialize_session(
        lsp.InitializeParams(
            capabilities=capabilities(), initialization_options={"settings": dict(SETTINGS, **(init or {}))}
        )
    )


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()

"""The Dragon language server: the pygls side, and nothing else.

`create_server()` makes a pygls server whose handlers live in feature modules
(`dragon_lsp.handlers`): each module registers thin handlers on a `Host`, which
wraps them (a bug costs one empty answer and a log message, never the server) and
gives them the client's services (publishing, messages, progress, edits). Only
this module and `convert.py` know pygls and lsprotocol.

What the server guarantees on bad input:
- a request whose params do not fit the method (a missing field, a negative or a
  string position...) is answered at once with JSON-RPC error -32602 (*invalid
  params*); a notification with bad params is dropped with a log message;
- a malformed message header costs that message only (`framing.FramedReader`).

    dragon-lsp                       # stdio (what editors start)
    dragon-lsp --tcp --port 2087     # TCP, for debugging
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import functools
import logging
import sys
import traceback
from collections.abc import Callable
from threading import Event
from typing import Any

import cattrs
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, default_converter, lsp_method

from dragon_lsp import __version__, convert, handlers
from dragon_lsp.background import Background
from dragon_lsp.framing import FramedReader
from dragon_lsp.handlers import InvalidParams
from dragon_lsp.session import Session, new_token

log = logging.getLogger("dragon_lsp")

_LEVELS = {
    "error": lsp.MessageType.Error,
    "warning": lsp.MessageType.Warning,
    "info": lsp.MessageType.Info,
    "log": lsp.MessageType.Log,
}
#: The `workDoneToken` of the executeCommand request being handled (a context variable, so each
#: command's task sees its own request's).
_WORK_DONE_TOKEN: contextvars.ContextVar = contextvars.ContextVar("dragon_work_done_token", default=None)


# ---- reading messages: params that do not fit, headers that do not parse ----------------------------


def _strict(kind: type, also: tuple = ()) -> Callable:
    ok = (kind,) + also

    def structure(value, _type):
        if isinstance(value, bool) and kind is not bool or not isinstance(value, ok):
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return structure


def strict_converter() -> cattrs.Converter:
    """lsprotocol's converter, except that JSON values are not coerced: cattrs would read a line "3"
    as 3 and a uri 5 as "5"; LSP says integer and string."""
    conv = default_converter()
    conv.register_structure_hook(int, _strict(int))
    conv.register_structure_hook(str, _strict(str))
    conv.register_structure_hook(bool, _strict(bool))
    conv.register_structure_hook(float, _strict(float, (int,)))
    return conv


class _Refused:
    """A message whose params do not fit its method: answered with an error, never handled."""

    jsonrpc = "2.0"

    def __init__(self, msg_id, method: str, message: str):
        self.id, self.method, self.message = msg_id, method, message


def _why(exc: BaseException) -> str:
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    if isinstance(cause, cattrs.BaseValidationError):
        return "; ".join(m.replace("$.", "") for m in cattrs.transform_error(cause)[:5])
    return str(cause) or type(cause).__name__


class DragonProtocol(LanguageServerProtocol):
    """pygls' protocol, except that documents live in the session's store only, and a request whose
    params do not fit is answered with *invalid params* instead of being dropped.

    pygls' own store splits lines as Python does (at U+2028, form feeds...), not as LSP
    does, and when it fails on an edit the server's handler never sees that edit; the
    session applies every edit itself (`documents.Document`).
    """

    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:  # pygls could not read the params (or the message)
            if isinstance(data, dict) and isinstance(data.get("method"), str):
                return _Refused(data.get("id"), data["method"], f"{data['method']}: {_why(exc)}")
            raise

    def handle_message(self, message):
        if isinstance(message, _Refused):
            if message.id is None:  # a notification cannot be answered
                log.warning("dropped a notification with invalid params: %s", message.message)
            else:
                self._send_response(message.id, None, JsonRpcInvalidParams(message.message).to_response_error())
            return None
        return super().handle_message(message)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params):
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params):
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params):
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params):
        # pygls hands a command handler only the arguments; keep the client's progress token.
        _WORK_DONE_TOKEN.set(params.work_done_token)
        return (yield from super().lsp_workspace__execute_command(params))


class DragonServer(LanguageServer):
    """pygls' server reading its input through `FramedReader` (stdio and TCP)."""

    def start_io(self, stdin=None, stdout=None):
        self._stop_event = Event()
        reader = FramedReader(StdinAsyncReader(stdin or sys.stdin.buffer, self.thread_pool))
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(
                run_async(
                    stop_event=self._stop_event,
                    reader=reader,
                    protocol=self.protocol,
                    logger=log,
                    error_handler=self.report_server_error,
                )
            )
        except BrokenPipeError:
            log.error("the connection to the client is lost: shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def start_tcp(self, host: str, port: int) -> None:
        self._stop_event = stop_event = Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
            self.protocol.set_writer(writer)  # type: ignore[arg-type]
            await run_async(
                stop_event=stop_event,
                reader=FramedReader(reader),
                protocol=self.protocol,
                logger=log,
                error_handler=self.report_server_error,
            )
            self.shutdown()

        async def serve():
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                await self._server.serve_forever()

        try:
            asyncio.run(serve())
        except asyncio.CancelledError:
            pass


# ---- the host the feature modules register on ---------------------------------------------------------


class Progress:
    """Work-done progress of one long-running command (a no-op without a token)."""

    def __init__(self, server: LanguageServer, token):
        self.server, self.token = server, token

    def report(self, message: str, percentage: int | None = None) -> None:
        if self.token is not None:
            self.server.work_done_progress.report(
                self.token, lsp.WorkDoneProgressReport(message=message, percentage=percentage, cancellable=True)
            )

    def end(self, outcome: str) -> None:
        if self.token is not None:
            self.server.work_done_progress.end(self.token, lsp.WorkDoneProgressEnd(message=outcome))
            self.server.work_done_progress.tokens.pop(self.token, None)


class Host:
    """What a feature module sees of the server: the session, the client's capabilities, registration
    (`feature`, `command`) and the client's services."""

    def __init__(self, server: LanguageServer):
        self.server = server
        self.caps: dict[str, Any] = {
            "snippets": False,
            "progress": False,
            "inlay_refresh": False,
            "configuration": False,
            "apply_edit": False,
            "document_changes": False,
        }
        self.session = Session(self.publish, self.notify)
        self.background = Background(self.session, self.publish, self.notify, self.refresh, self.apply_edit)

    # -- registration ------------------------------------------------------------------------------------

    def feature(self, method: str, options: Any = None, default: Any = None) -> Callable:
        """Register a handler for an LSP method (or a custom one); see `guard`."""

        def deco(fn):
            self.server.feature(method, options)(self.guard(fn, default))
            return fn

        return deco

    def command(self, name: str, default: Any = None) -> Callable:
        def deco(fn):
            self.server.command(name)(self.guard(fn, default))
            return fn

        return deco

    def guard(self, fn: Callable, default: Any) -> Callable:
        """Answer `default` (and log) instead of failing; `InvalidParams` becomes JSON-RPC error -32602;
        JSON-RPC errors and cancellation pass."""

        def failed():
            self.session.internal_errors += 1
            self.notify("error", f"internal error in {fn.__name__}: {traceback.format_exc()}")
            return default

        if asyncio.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def awrapper(*a):
                try:
                    return await fn(*a)
                except InvalidParams as exc:
                    raise JsonRpcInvalidParams(str(exc)) from None
                except (JsonRpcException, asyncio.CancelledError):
                    raise
                except Exception:
                    return failed()

            return awrapper

        @functools.wraps(fn)
        def wrapper(*a):
            try:
                return fn(*a)
            except InvalidParams as exc:
                raise JsonRpcInvalidParams(str(exc)) from None
            except JsonRpcException:
                raise
            except Exception:
                return failed()

        return wrapper

    # -- the client's services -----------------------------------------------------------------------------

    @property
    def position_encoding(self) -> str:
        return convert.encoding_name(self.server.workspace.position_encoding)

    def publish(self, uri, version, diags, lines) -> None:
        self.server.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(
                uri=uri, version=version, diagnostics=convert.diagnostics(diags, lines, self.session.encoding, uri)
            )
        )

    def notify(self, level: str, message: str) -> None:
        self.server.window_log_message(lsp.LogMessageParams(_LEVELS.get(level, lsp.MessageType.Log), message))

    def refresh(self) -> None:
        if self.caps["inlay_refresh"]:
            self.server.workspace_inlay_hint_refresh(None)

    async def apply_edit(self, uri, version, edits, lines) -> bool:
        if not self.caps["apply_edit"]:
            return False
        edit = convert.workspace_edit(
            uri, edits, lines, self.session.encoding, version if self.caps["document_changes"] else None
        )
        answer = await self.server.workspace_apply_edit_async(lsp.ApplyWorkspaceEditParams(edit=edit, label="Dragon"))
        return bool(answer and answer.applied)

    async def configuration(self) -> Any:
        """The client's `dragon` section (workspace/configuration), or None."""
        answer = await self.server.protocol.send_request_async(
            lsp.WORKSPACE_CONFIGURATION, lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="dragon")])
        )
        return convert.plain(answer[0]) if answer and answer[0] is not None else None

    async def progress(self, title: str, task: asyncio.Task) -> Progress:
        """Progress on the request's token, else on one the server creates when the client takes them;
        the client's cancel button (window/workDoneProgress/cancel) and `$/cancelRequest` cancel `task`."""
        self._cancel_with_request(task)
        token = _WORK_DONE_TOKEN.get()
        if token is None and self.caps["progress"]:
            token = new_token()
            try:
                await self.server.work_done_progress.create_async(token)
            except Exception:
                return Progress(self.server, None)
        if token is None:
            return Progress(self.server, None)
        self.server.work_done_progress.begin(
            token, lsp.WorkDoneProgressBegin(title=title, cancellable=True, message="starting", percentage=0)
        )
        self.server.work_done_progress.tokens[token].add_done_callback(
            lambda f: task.cancel() if f.cancelled() and not task.done() else None
        )
        return Progress(self.server, token)

    def _cancel_with_request(self, task: asyncio.Task) -> None:
        """`$/cancelRequest` for workspace/executeCommand cancels pygls' outer future; pass it on."""
        protocol = self.server.protocol
        msg_id = protocol.msg_id
        outer = getattr(protocol, "_request_futures", {}).get(msg_id) if msg_id is not None else None
        if outer is not None:
            outer.add_done_callback(lambda f: task.cancel() if f.cancelled() and not task.done() else None)


def create_server() -> LanguageServer:
    server = DragonServer(
        "dragon-lsp",
        __version__,
        text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
        protocol_cls=DragonProtocol,
        converter_factory=strict_converter,
    )
    host = Host(server)
    server.session = host.session  # for tests and embedding
    server.background = host.background
    handlers.register_all(host)
    return server


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="dragon-lsp", description="The Dragon language server.")
    p.add_argument("--stdio", action="store_true", help="speak LSP on stdin/stdout (the default)")
    p.add_argument("--tcp", action="store_true", help="listen on a TCP port instead")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=2087)
    p.add_argument("--log-file", help="write the server's log here")
    p.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    p.add_argument("--version", action="version", version=f"dragon-lsp {__version__}")
    args = p.parse_args(argv)
    handler = logging.FileHandler(args.log_file) if args.log_file else logging.StreamHandler(sys.stderr)
    logging.basicConfig(
        level=args.log_level, handlers=[handler], format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    server = create_server()
    try:
        if args.tcp:
            server.start_tcp(args.host, args.port)
        else:
            server.start_io()
    finally:
        server.background.shutdown()
    return 0

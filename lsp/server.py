"""The Dragon language server: a pygls server made by `create_server()`, with thin handlers.

Each handler converts the request's positions (`convert`), calls a feature
function or the session, and converts the plain answer back. A handler never
lets an exception reach pygls: a bug in a feature costs one empty answer and a
log message, never the server.

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
from typing import Any, Optional

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from dragon_lsp import __version__, commands, config, convert
from dragon_lsp.features import actions, completion, formatting, hover, inlay, navigation, signature, symbols, tokens
from dragon_lsp.features.data import Action
from dragon_lsp.session import Session, new_token
from dragon_lsp.workers import WorkerError

log = logging.getLogger("dragon_lsp")

#: A custom request answering the server's state (tests, debugging): documents, workers, settings.
STATUS = "dragon/status"
_LEVELS = {"error": lsp.MessageType.Error, "warning": lsp.MessageType.Warning, "info": lsp.MessageType.Info,
           "log": lsp.MessageType.Log}
#: The `workDoneToken` of the executeCommand request being handled (a context variable, so each
#: command's task sees its own request's).
_WORK_DONE_TOKEN: contextvars.ContextVar = contextvars.ContextVar("dragon_work_done_token", default=None)


class DragonProtocol(LanguageServerProtocol):
    """pygls' protocol, except that documents live in the session's store only.

    pygls' own store splits lines as Python does (at U+2028, form feeds...), not as LSP
    does, and when it fails on an edit the server's handler never sees that edit; the
    session applies every edit itself (`documents.Document`).
    """

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


def create_server() -> LanguageServer:
    server = LanguageServer("dragon-lsp", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                            protocol_cls=DragonProtocol)
    caps: dict[str, Any] = {"snippets": False, "progress": False, "inlay_refresh": False, "configuration": False,
                            "apply_edit": False, "document_changes": False}

    def publish(uri, version, diags, lines):
        server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=convert.diagnostics(diags, lines, session.encoding, uri)))

    def notify(level: str, message: str):
        server.window_log_message(lsp.LogMessageParams(_LEVELS.get(level, lsp.MessageType.Log), message))

    def refresh():
        if caps["inlay_refresh"]:
            server.workspace_inlay_hint_refresh(None)

    async def apply_edit(uri, version, edits, lines) -> bool:
        if not caps["apply_edit"]:
            return False
        edit = convert.workspace_edit(uri, edits, lines, session.encoding,
                                      version if caps["document_changes"] else None)
        answer = await server.workspace_apply_edit_async(lsp.ApplyWorkspaceEditParams(edit=edit, label="Dragon"))
        return bool(answer and answer.applied)

    session = Session(publish, notify, refresh, apply_edit)
    server.session = session  # for tests and embedding

    def guard(default=None):
        """Answer `default` (and log) instead of failing; JSON-RPC errors meant for the client pass."""

        def deco(fn):
            if asyncio.iscoroutinefunction(fn):
                @functools.wraps(fn)
                async def awrapper(*a):
                    try:
                        return await fn(*a)
                    except (JsonRpcException, asyncio.CancelledError):
                        raise
                    except Exception:  # noqa: BLE001 - see the module docstring
                        session.internal_errors += 1
                        notify("error", f"internal error in {fn.__name__}: {traceback.format_exc()}")
                        return default
                return awrapper

            @functools.wraps(fn)
            def wrapper(*a):
                try:
                    return fn(*a)
                except JsonRpcException:
                    raise
                except Exception:  # noqa: BLE001
                    session.internal_errors += 1
                    notify("error", f"internal error in {fn.__name__}: {traceback.format_exc()}")
                    return default
            return wrapper

        return deco

    def doc_of(params):
        uri = params.text_document.uri
        an = session.analysis(uri)
        return uri, an

    def pos(an, position):
        return convert.from_position(an.lines, position, session.encoding)

    # -- lifecycle and configuration ------------------------------------------------------------

    @server.feature(lsp.INITIALIZE)
    @guard()
    def initialize(params: lsp.InitializeParams):
        session.encoding = convert.encoding_name(server.workspace.position_encoding)
        c = params.capabilities
        caps["snippets"] = bool(_get(c, "text_document.completion.completion_item.snippet_support"))
        caps["progress"] = bool(_get(c, "window.work_done_progress"))
        caps["inlay_refresh"] = bool(_get(c, "workspace.inlay_hint.refresh_support"))
        caps["configuration"] = bool(_get(c, "workspace.configuration"))
        caps["apply_edit"] = bool(_get(c, "workspace.apply_edit"))
        caps["document_changes"] = bool(_get(c, "workspace.workspace_edit.document_changes"))
        md = lsp.MarkupKind.Markdown
        caps["md_hover"] = md in (_get(c, "text_document.hover.content_format") or ())
        caps["md_completion"] = md in (_get(c, "text_document.completion.completion_item.documentation_format") or ())
        caps["md_signature"] = md in (_get(c, "text_document.signature_help.signature_information.documentation_format")
                                      or ())
        settings = config.initialization_settings(convert.plain(params.initialization_options))
        if settings is not None:
            session.configure(settings)

    @server.feature(lsp.INITIALIZED)
    @guard()
    async def initialized(params):
        await pull_configuration()

    async def pull_configuration():
        if not caps["configuration"]:
            return
        try:
            answer = await server.protocol.send_request_async(
                lsp.WORKSPACE_CONFIGURATION, lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="dragon")]))
        except Exception as exc:  # noqa: BLE001 - a client that cannot answer keeps the defaults
            notify("warning", f"workspace/configuration failed: {exc}")
            return
        if answer and answer[0] is not None:
            session.configure(convert.plain(answer[0]))

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @guard()
    async def did_change_configuration(params: lsp.DidChangeConfigurationParams):
        settings = config.changed_settings(convert.plain(params.settings))
        if settings is not None:
            session.configure(settings)
        else:
            await pull_configuration()

    @server.feature(lsp.SHUTDOWN)
    @guard()
    def shutdown(params):
        session.shutdown()

    # -- documents ----------------------------------------------------------------------------------------

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    @guard()
    def did_open(params: lsp.DidOpenTextDocumentParams):
        d = params.text_document
        session.open(d.uri, d.text, d.version)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    @guard()
    def did_change(params: lsp.DidChangeTextDocumentParams):
        session.change(params.text_document.uri, params.content_changes, params.text_document.version)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    @guard()
    def did_close(params: lsp.DidCloseTextDocumentParams):
        session.close(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))
    @guard()
    def did_save(params: lsp.DidSaveTextDocumentParams):
        session.saved(params.text_document.uri)

    # -- formatting --------------------------------------------------------------------------------------------

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    @guard()
    def format_document(params: lsp.DocumentFormattingParams):
        uri, an = doc_of(params)
        if an is None:
            return None
        edits = formatting.format_document(an.text, session.eol(uri))
        return None if edits is None else convert.text_edits(edits, an.lines, session.encoding)

    @server.feature(lsp.TEXT_DOCUMENT_RANGE_FORMATTING)
    @guard()
    def format_range(params: lsp.DocumentRangeFormattingParams):
        uri, an = doc_of(params)
        if an is None:
            return None
        span = convert.from_range(an.lines, params.range, session.encoding)
        last = span.end_line - 1 if span.end_column == 1 and span.end_line > span.line else span.end_line
        edits = formatting.format_range(an.text, span.line, last, session.eol(uri))
        return None if edits is None else convert.text_edits(edits, an.lines, session.encoding)

    # -- hover, navigation ---------------------------------------------------------------------------------------

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @guard()
    def on_hover(params: lsp.HoverParams):
        uri, an = doc_of(params)
        if an is None:
            return None
        line, col = pos(an, params.position)
        return convert.hover(hover.hover(an, line, col, session.facts(uri)), an.lines, session.encoding,
                             caps.get("md_hover", False))

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    @guard()
    def on_definition(params: lsp.DefinitionParams):
        uri, an = doc_of(params)
        if an is None:
            return None
        span = navigation.definition(an, *pos(an, params.position))
        return None if span is None else convert.location(uri, span, an.lines, session.encoding)

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    @guard([])
    def on_references(params: lsp.ReferenceParams):
        uri, an = doc_of(params)
        if an is None:
            return []
        spans = navigation.references(an, *pos(an, params.position), params.context.include_declaration)
        return [convert.location(uri, s, an.lines, session.encoding) for s in spans]

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    @guard()
    def on_prepare_rename(params: lsp.PrepareRenameParams):
        uri, an = doc_of(params)
        if an is None:
            return None
        found = navigation.prepare_rename(an, *pos(an, params.position))
        if found is None:
            return None
        return convert.prepare_rename(*found, an.lines, session.encoding)

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    @guard()
    def on_rename(params: lsp.RenameParams):
        uri, an = doc_of(params)
        if an is None:
            return None
        try:
            edits = navigation.rename(an, *pos(an, params.position), params.new_name)
        except navigation.RenameError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        return convert.workspace_edit(uri, edits, an.lines, session.encoding)

    # -- completion, signature help ----------------------------------------------------------------------------------

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=["(", ",", "=", '"', " "]))
    @guard()
    def on_completion(params: lsp.CompletionParams):
        uri, an = doc_of(params)
        if an is None:
            return None
        line, col = pos(an, params.position)
        items = completion.complete(an, line, col, blocks=session.known_blocks(uri),
                                    workload_files=session.workload_files(uri))
        return convert.completion_list(items, an.lines, session.encoding, caps["snippets"], caps.get("md_completion", False))

    @server.feature(lsp.TEXT_DOCUMENT_SIGNATURE_HELP, lsp.SignatureHelpOptions(trigger_characters=["(", ","],
                                                                                retrigger_characters=["="]))
    @guard()
    def on_signature_help(params: lsp.SignatureHelpParams):
        uri, an = doc_of(params)
        if an is None:
            return None
        return convert.signature_help(signature.signature_help(an.lines, *pos(an, params.position)),
                                      caps.get("md_signature", False))

    # -- tokens, symbols, hints ------------------------------------------------------------------------------------------

    @server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, convert.LEGEND)
    @guard()
    def on_tokens(params: lsp.SemanticTokensParams):
        uri, an = doc_of(params)
        if an is None:
            return None
        return convert.semantic_tokens(tokens.semantic_tokens(an), an.lines, session.encoding)

    @server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, convert.LEGEND)
    @guard()
    def on_tokens_range(params: lsp.SemanticTokensRangeParams):
        uri, an = doc_of(params)
        if an is None:
            return None
        span = convert.from_range(an.lines, params.range, session.encoding)
        return convert.semantic_tokens(tokens.semantic_tokens(an, span.line, span.end_line), an.lines, session.encoding)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guard([])
    def on_symbols(params: lsp.DocumentSymbolParams):
        uri, an = doc_of(params)
        if an is None:
            return []
        return [convert.document_symbol(s, an.lines, session.encoding) for s in symbols.document_symbols(an)]

    @server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
    @guard([])
    def on_inlay_hints(params: lsp.InlayHintParams):
        uri, an = doc_of(params)
        if an is None:
            return []
        span = convert.from_range(an.lines, params.range, session.encoding)
        hints = inlay.inlay_hints(an, session.facts(uri), span.line, span.end_line)
        return [convert.inlay_hint(h, an.lines, session.encoding) for h in hints]

    # -- code actions and commands ----------------------------------------------------------------------------------------

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=[
        lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.RefactorRewrite, lsp.CodeActionKind.Source]))
    @guard([])
    def on_code_action(params: lsp.CodeActionParams):
        uri, an = doc_of(params)
        if an is None:
            return []
        span = convert.from_range(an.lines, params.range, session.encoding)
        st = session.docs[uri]
        current = list(an.diagnostics)
        for ver, ds in (st.replay_diags, st.measure_diags):
            if ver == st.doc.version:
                current += ds
        near = [d for d in current if actions.overlaps(d.span, span)]
        found: list[Action] = actions.quick_fixes(an, near)
        for s in session.suggestions(uri):
            found.append(Action(s.title, "rewrite", session.replacement(uri, s.text)))
        args = commands.arguments(uri, st.doc.version)
        found.append(Action("Suggest a schedule (validated: replay, build, verify, time)", "rewrite",
                            command=(commands.SUGGEST, args)))
        found.append(Action("Rewrite this schedule (validated, must be faster)", "rewrite",
                            command=(commands.REWRITE, args)))
        found.append(Action("Measure the latency of this schedule", "source", command=(commands.MEASURE, args)))
        only = params.context.only
        if only:
            found = [a for a in found if any(str(convert._ACTION_KINDS[a.kind]).startswith(str(k)) for k in only)]
        lsp_diags = convert.diagnostics(near, an.lines, session.encoding, uri)
        return [convert.code_action(a, uri, an.lines, session.encoding, lsp_diags) for a in found]

    def request(args) -> commands.Request:
        try:
            return convert.command_request(args, session.lines, session.encoding)
        except ValueError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None

    async def long_running(name: str, work) -> dict:
        """Run `work(report)` with work-done progress (the request's token, else one the server creates when
        the client takes them) that can cancel it, as can `$/cancelRequest`; a cancelled or failed worker
        is an answer, never an exception (a CancelledError escaping a command leaves it unanswered)."""
        task = asyncio.current_task()
        _cancel_with_request(server, task)
        token = await start_progress(commands.TITLES[name], task)

        def report(message: str, percentage: Optional[int] = None):
            if token is not None:
                server.work_done_progress.report(token, lsp.WorkDoneProgressReport(
                    message=message, percentage=percentage, cancellable=True))

        outcome = "done"
        try:
            answer = await work(report)
        except asyncio.CancelledError:
            outcome, answer = "cancelled", {"message": f"{commands.TITLES[name]}: cancelled", "cancelled": True}
        except WorkerError as exc:
            outcome, answer = "failed", {"error": str(exc)}
        finally:
            if token is not None:
                server.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message=outcome))
                server.work_done_progress.tokens.pop(token, None)
        return answer

    async def start_progress(title: str, task: asyncio.Task):
        token = _WORK_DONE_TOKEN.get()
        if token is None and caps["progress"]:
            token = new_token()
            try:
                await server.work_done_progress.create_async(token)
            except Exception:  # noqa: BLE001 - no progress UI then
                return None
        if token is None:
            return None
        server.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(title=title, cancellable=True,
                                                                          message="starting", percentage=0))
        # The client's cancel button (window/workDoneProgress/cancel) cancels the future pygls keeps.
        server.work_done_progress.tokens[token].add_done_callback(
            lambda f: task.cancel() if f.cancelled() and not task.done() else None)
        return token

    @server.command(commands.SUGGEST)
    @guard({"error": "internal error in the language server (see its log)"})
    async def suggest_schedule(*args):
        req = request(args)
        return await long_running(commands.SUGGEST, lambda report: commands.suggest(session, req, "suggest", report))

    @server.command(commands.REWRITE)
    @guard({"error": "internal error in the language server (see its log)"})
    async def rewrite_schedule(*args):
        req = request(args)
        return await long_running(commands.REWRITE, lambda report: commands.suggest(session, req, "rewrite", report))

    @server.command(commands.TENSORIR)
    @guard({"error": "internal error in the language server (see its log)"})
    async def show_tensorir(*args):
        req = request(args)
        return await long_running(commands.TENSORIR, lambda report: commands.show_tensorir(session, req))

    @server.command(commands.CUDA)
    @guard({"error": "internal error in the language server (see its log)"})
    async def show_cuda_source(*args):
        req = request(args)
        return await long_running(commands.CUDA, lambda report: commands.show_cuda_source(session, req))

    @server.command(commands.MEASURE)
    @guard({"error": "internal error in the language server (see its log)"})
    async def measure_latency(*args):
        req = request(args)
        return await long_running(commands.MEASURE, lambda report: commands.measure_latency(session, req))

    @server.command(commands.LIST_TARGETS)
    @guard({})
    async def list_targets(*args):
        return await commands.list_targets(session)

    @server.feature(STATUS)
    @guard({})
    def status(params):
        return session.status()

    return server


def _cancel_with_request(server: LanguageServer, task: asyncio.Task) -> None:
    """`$/cancelRequest` for workspace/executeCommand cancels pygls' outer future; pass it on."""
    msg_id = server.protocol.msg_id
    outer = getattr(server.protocol, "_request_futures", {}).get(msg_id) if msg_id is not None else None
    if outer is not None:
        outer.add_done_callback(lambda f: task.cancel() if f.cancelled() and not task.done() else None)


def _get(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


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
    logging.basicConfig(level=args.log_level, handlers=[handler],
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    server = create_server()
    try:
        if args.tcp:
            server.start_tcp(args.host, args.port)
        else:
            server.start_io()
    finally:
        server.session.shutdown()
    return 0

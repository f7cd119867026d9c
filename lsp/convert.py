"""Conversions between the language core's plain data and LSP types.

The only module that knows lsprotocol's types and position encodings. The core
and the features speak spans: 1-based line and column in code points, end
exclusive (`dragon_dsl.language.diagnostics.Span`). LSP speaks 0-based lines and
characters counted in the negotiated position encoding: UTF-16 code units by
default, UTF-8 bytes or UTF-32 code points when the client offers them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from lsprotocol import types as lsp
from lsprotocol.converters import get_converter

from dragon_dsl.language.diagnostics import Diagnostic, Severity, Span
from dragon_lsp.commands import OVERRIDES, Request

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


# ---- positions -----------------------------------------------------------------


def encoding_name(kind: Any) -> str:
    """lsprotocol's PositionEncodingKind (or its string) -> one of UTF8, UTF16, UTF32."""
    value = getattr(kind, "value", kind)
    return value if value in (UTF8, UTF16, UTF32) else UTF16


def cp_to_units(line: str, cp: int, encoding: str) -> int:
    """A code point column (0-based) of `line` -> code units of the encoding (clamped to the line)."""
    prefix = line[: max(cp, 0)]
    if encoding == UTF32 or prefix.isascii():
        return len(prefix)
    if encoding == UTF16:
        return len(prefix) + sum(1 for ch in prefix if ord(ch) > 0xFFFF)
    return len(prefix.encode("utf-8", "surrogatepass"))


def units_to_cp(line: str, units: int, encoding: str) -> int:
    """Code units of the encoding -> a code point column of `line` (0-based, clamped).

    A position inside a character (half of a surrogate pair, the middle of a UTF-8
    sequence) means the start of that character.
    """
    if units <= 0:
        return 0
    if encoding == UTF32 or line.isascii():
        return min(units, len(line))
    count = 0
    for i, ch in enumerate(line):
        o = ord(ch)
        if encoding == UTF16:
            w = 2 if o > 0xFFFF else 1
        else:
            w = 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4
        if count + w > units:
            return i
        count += w
    return len(line)


def position(lines: Sequence[str], line1: int, col1: int, encoding: str) -> lsp.Position:
    """A 1-based code point position -> an LSP position (clamped to the document)."""
    if not lines:
        return lsp.Position(0, 0)
    li = min(max(line1 - 1, 0), len(lines) - 1)
    if line1 - 1 >= len(lines):
        return lsp.Position(li, cp_to_units(lines[li], len(lines[li]), encoding))
    return lsp.Position(li, cp_to_units(lines[li], col1 - 1, encoding))


def range_(lines: Sequence[str], span: Span, encoding: str) -> lsp.Range:
    return lsp.Range(
        position(lines, span.line, span.column, encoding), position(lines, span.end_line, span.end_column, encoding)
    )


def from_position(lines: Sequence[str], pos: lsp.Position, encoding: str) -> tuple[int, int]:
    """An LSP position -> (line, column), 1-based code points, clamped to the document."""
    if not lines:
        return 1, 1
    li = pos.line
    if li < 0:
        return 1, 1
    if li >= len(lines):
        return len(lines), len(lines[-1]) + 1
    return li + 1, units_to_cp(lines[li], pos.character, encoding) + 1


def from_range(lines: Sequence[str], rng: lsp.Range, encoding: str) -> Span:
    a = from_position(lines, rng.start, encoding)
    b = from_position(lines, rng.end, encoding)
    if b < a:
        a, b = b, a
    return Span(a[0], a[1], b[0], b[1])


# ---- diagnostics -----------------------------------------------------------------

_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}
_DOCS = "https://github.com/little-dragon/little-dragon/blob/main/docs/INSTRUCTIONS.md#diagnostic-codes"


def diagnostic(d: Diagnostic, lines: Sequence[str], encoding: str, uri: str, source: str = "dragon") -> lsp.Diagnostic:
    related = [
        lsp.DiagnosticRelatedInformation(lsp.Location(uri, range_(lines, r.span, encoding)), r.message)
        for r in d.related
    ] or None
    tags = [lsp.DiagnosticTag.Unnecessary] if d.code == "DRG104" else None
    return lsp.Diagnostic(
        range=range_(lines, d.span, encoding),
        message=d.message,
        severity=_SEVERITY.get(d.severity),
        code=d.code,
        source=source,
        related_information=related,
        tags=tags,
        data={"code": d.code, "span": list(d.span)},
    )


def diagnostics(diags, lines, encoding, uri) -> list[lsp.Diagnostic]:
    return [diagnostic(d, lines, encoding, uri, getattr(d, "source", None) or "dragon") for d in diags]


# ---- edits, locations ------------------------------------------------------------------


def text_edit(edit, lines, encoding) -> lsp.TextEdit:
    return lsp.TextEdit(range_(lines, edit.span, encoding), edit.text)


def text_edits(edits, lines, encoding) -> list[lsp.TextEdit]:
    return [text_edit(e, lines, encoding) for e in edits]


def workspace_edit(uri: str, edits, lines, encoding, version: int | None = None) -> lsp.WorkspaceEdit:
    if version is not None:
        doc = lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return lsp.WorkspaceEdit(
            document_changes=[lsp.TextDocumentEdit(text_document=doc, edits=text_edits(edits, lines, encoding))]
        )
    return lsp.WorkspaceEdit(changes={uri: text_edits(edits, lines, encoding)})


def prepare_rename(span: Span, name: str, lines, encoding) -> lsp.PrepareRenamePlaceholder:
    return lsp.PrepareRenamePlaceholder(range=range_(lines, span, encoding), placeholder=name)


def location(uri: str, span: Span, lines, encoding) -> lsp.Location:
    return lsp.Location(uri, range_(lines, span, encoding))


# ---- hover, completion, signature help -------------------------------------------------


def markup(text: str, markdown: bool = True):
    """Markdown when the client renders it, else the text as it reads without Markdown (no code
    fences, backticks or emphasis marks: a plain-text client shows them as typed)."""
    if markdown:
        return lsp.MarkupContent(lsp.MarkupKind.Markdown, text)
    return lsp.MarkupContent(lsp.MarkupKind.PlainText, plain_text(text))


_FENCE = re.compile(r"^```[\w-]*[ \t]*$\n?", re.M)
_EMPHASIS = re.compile(r"\*\*(.+?)\*\*|`([^`\n]*)`")
_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\s]+\)")


def plain_text(markdown: str) -> str:
    """MARKDOWN as plain text: fenced code keeps its lines, inline code and bold lose their marks,
    a link keeps its words."""
    text = _FENCE.sub("", markdown)
    text = _LINK.sub(r"\1", text)
    return _EMPHASIS.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)


def hover(h, lines, encoding, markdown: bool = True) -> lsp.Hover | None:
    if h is None:
        return None
    rng = range_(lines, h.span, encoding) if h.span is not None else None
    return lsp.Hover(markup(h.markdown, markdown), rng)


_COMPLETION_KINDS = {
    "instruction": lsp.CompletionItemKind.Function,
    "keyword": lsp.CompletionItemKind.Property,
    "variable": lsp.CompletionItemKind.Variable,
    "block": lsp.CompletionItemKind.Value,
    "value": lsp.CompletionItemKind.EnumMember,
    "constant": lsp.CompletionItemKind.Constant,
    "directive": lsp.CompletionItemKind.Keyword,
    "section": lsp.CompletionItemKind.Module,
    "explain": lsp.CompletionItemKind.Struct,
    "snippet": lsp.CompletionItemKind.Snippet,
}


def completion_item(item, lines, encoding, snippets: bool, markdown: bool = True) -> lsp.CompletionItem:
    use_snippet = snippets and item.snippet is not None
    text = item.snippet if use_snippet else (item.insert if item.insert is not None else item.label)
    edit = lsp.TextEdit(range_(lines, item.replace, encoding), text) if item.replace is not None else None
    return lsp.CompletionItem(
        label=item.label,
        kind=_COMPLETION_KINDS.get(item.kind, lsp.CompletionItemKind.Text),
        detail=item.detail or None,
        documentation=markup(item.doc, markdown) if item.doc else None,
        sort_text=item.sort,
        filter_text=item.filter,
        insert_text=None if edit is not None else text,
        insert_text_format=lsp.InsertTextFormat.Snippet if use_snippet else lsp.InsertTextFormat.PlainText,
        text_edit=edit,
    )


def completion_list(items, lines, encoding, snippets: bool, markdown: bool = True) -> lsp.CompletionList:
    return lsp.CompletionList(
        is_incomplete=bool(getattr(items, "incomplete", False)),
        items=[completion_item(i, lines, encoding, snippets, markdown) for i in items],
    )


def signature_help(sig, markdown: bool = True) -> lsp.SignatureHelp | None:
    if sig is None:
        return None
    params = [lsp.ParameterInformation(label=(a, b), documentation=doc or None) for a, b, doc in sig.params]
    info = lsp.SignatureInformation(
        label=sig.label,
        documentation=markup(sig.doc, markdown) if sig.doc else None,
        parameters=params,
        active_parameter=sig.active,
    )
    return lsp.SignatureHelp(signatures=[info], active_signature=0, active_parameter=sig.active)


# ---- semantic tokens --------------------------------------------------------------------

TOKEN_TYPES = [
    "function",
    "variable",
    "parameter",
    "property",
    "string",
    "number",
    "comment",
    "keyword",
    "namespace",
    "label",
    "type",
    "operator",
]
TOKEN_MODIFIERS = ["declaration", "readonly", "defaultLibrary", "block", "loop", "value"]
LEGEND = lsp.SemanticTokensLegend(token_types=TOKEN_TYPES, token_modifiers=TOKEN_MODIFIERS)
_TYPE_INDEX = {t: i for i, t in enumerate(TOKEN_TYPES)}
_MOD_BIT = {m: 1 << i for i, m in enumerate(TOKEN_MODIFIERS)}


def semantic_tokens(tokens, lines, encoding) -> lsp.SemanticTokens:
    """Tokens (sorted, single-line) -> LSP's relative integer encoding."""
    data: list[int] = []
    prev_line = prev_start = 0
    for t in tokens:
        li = t.line - 1
        if li < 0 or li >= len(lines):
            continue
        text = lines[li]
        start = cp_to_units(text, t.col - 1, encoding)
        end = cp_to_units(text, t.col - 1 + t.length, encoding)
        if end <= start:
            continue
        delta_line = li - prev_line
        delta_start = start - prev_start if delta_line == 0 else start
        if delta_line == 0 and data and delta_start < 0:
            continue  # overlapping token: keep the first
        mods = 0
        for m in t.modifiers:
            mods |= _MOD_BIT.get(m, 0)
        data += [delta_line, delta_start, end - start, _TYPE_INDEX[t.type], mods]
        prev_line, prev_start = li, start
    return lsp.SemanticTokens(data=data)


# ---- symbols, inlay hints, folding -------------------------------------------------------

_SYMBOL_KINDS = {
    "directive": lsp.SymbolKind.Property,
    "section": lsp.SymbolKind.Namespace,
    "instruction": lsp.SymbolKind.Function,
    "variable": lsp.SymbolKind.Variable,
    "explain": lsp.SymbolKind.Event,
}


def document_symbol(s, lines, encoding) -> lsp.DocumentSymbol:
    return lsp.DocumentSymbol(
        name=s.name or "?",
        kind=_SYMBOL_KINDS.get(s.kind, lsp.SymbolKind.Object),
        detail=s.detail or None,
        range=range_(lines, s.span, encoding),
        selection_range=range_(lines, s.selection, encoding),
        children=[document_symbol(c, lines, encoding) for c in s.children] or None,
    )


def inlay_hint(h, lines, encoding) -> lsp.InlayHint:
    kind = lsp.InlayHintKind.Type if h.kind == "type" else lsp.InlayHintKind.Parameter
    return lsp.InlayHint(
        position=position(lines, h.line, h.col, encoding),
        label=h.label,
        kind=kind,
        tooltip=h.tooltip or None,
        padding_left=h.pad_left,
        padding_right=h.pad_right,
    )


# ---- code actions --------------------------------------------------------------------------

_ACTION_KINDS = {
    "quickfix": lsp.CodeActionKind.QuickFix,
    "rewrite": lsp.CodeActionKind.RefactorRewrite,
    "source": lsp.CodeActionKind.Source,
}


def code_action(a, uri, lines, encoding, lsp_diags) -> lsp.CodeAction:
    edit = workspace_edit(uri, a.edits, lines, encoding) if a.edits is not None else None
    command = lsp.Command(title=a.title, command=a.command[0], arguments=list(a.command[1])) if a.command else None
    diags = None
    if a.diagnostic is not None:
        diags = [
            d
            for d in lsp_diags
            if d.code == a.diagnostic.code and d.data and d.data.get("span") == list(a.diagnostic.span)
        ] or None
    return lsp.CodeAction(
        title=a.title,
        kind=_ACTION_KINDS.get(a.kind, a.kind),
        diagnostics=diags,
        edit=edit,
        command=command,
        is_preferred=a.preferred or None,
    )


def action_kind_in(kind: str, only) -> bool:
    """Whether an action of `kind` is one of the kinds a client asked for (`context.only`, prefixes)."""
    return any(str(_ACTION_KINDS.get(kind, kind)).startswith(str(k)) for k in only)


# ---- what the server offers, what the client can ------------------------------------------------

SAVE_OPTIONS = lsp.SaveOptions(include_text=False)
COMPLETION_OPTIONS = lsp.CompletionOptions(trigger_characters=["(", ",", "=", '"', " "])
SIGNATURE_OPTIONS = lsp.SignatureHelpOptions(trigger_characters=["(", ","], retrigger_characters=["="])
CODE_ACTION_OPTIONS = lsp.CodeActionOptions(
    code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.RefactorRewrite, lsp.CodeActionKind.Source]
)


def _get(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def client_capabilities(c) -> dict[str, bool]:
    """What the server uses of the client's capabilities (`initialize`), as flags."""
    md = lsp.MarkupKind.Markdown
    return {
        "snippets": bool(_get(c, "text_document.completion.completion_item.snippet_support")),
        "progress": bool(_get(c, "window.work_done_progress")),
        "inlay_refresh": bool(_get(c, "workspace.inlay_hint.refresh_support")),
        "configuration": bool(_get(c, "workspace.configuration")),
        "apply_edit": bool(_get(c, "workspace.apply_edit")),
        "document_changes": bool(_get(c, "workspace.workspace_edit.document_changes")),
        "md_hover": md in (_get(c, "text_document.hover.content_format") or ()),
        "md_completion": md in (_get(c, "text_document.completion.completion_item.documentation_format") or ()),
        "md_signature": md
        in (_get(c, "text_document.signature_help.signature_information.documentation_format") or ()),
    }


# ---- commands ----------------------------------------------------------------------------------


def command_request(args: Sequence[Any], lines_of: Callable[[str], Sequence[str] | None], encoding: str) -> Request:
    """`workspace/executeCommand`'s arguments, `[{uri, version, target, device, trackerAddress, range?,
    prompt?}]` -> a Request (`lines_of(uri)`: the document's lines, to read the range). Raises ValueError
    on a malformed argument."""
    items = plain(list(args or ()))
    if not items or not isinstance(items[0], dict):
        raise ValueError("expects one argument: {uri, version, target, device, trackerAddress, range?, prompt?}")
    a = items[0]
    uri = a.get("uri")
    if not isinstance(uri, str) or not uri:
        raise ValueError("argument.uri must be a document URI")
    version = a.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise ValueError("argument.version must be an integer")
    prompt = a.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise ValueError("argument.prompt must be a string")
    span = None
    if a.get("range") is not None:
        try:
            rng = get_converter().structure(a["range"], lsp.Range)
        except Exception as exc:
            raise ValueError(f"argument.range is not an LSP range: {exc}") from None
        span = from_range(lines_of(uri) or [""], rng, encoding)
    overrides = {k: a[k] for k in OVERRIDES if k in a}
    return Request(uri, version, overrides, span, prompt)


# ---- configuration ---------------------------------------------------------------------------


def plain(obj) -> Any:
    """Settings from the client (lsprotocol may hand over cattrs-structured objects) -> plain JSON data."""
    try:
        return json.loads(json.dumps(obj, default=lambda o: getattr(o, "__dict__", str(o))))
    except (TypeError, ValueError):
        return None

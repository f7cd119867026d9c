"""Code actions: quick fixes for the diagnostics near the range, the validated suggestions of the
current version, and the schedule commands."""

from __future__ import annotations

from dragon_lsp import commands, convert
from dragon_lsp.features import actions
from dragon_lsp.features.data import Action
from dragon_lsp.handlers import document


def register(host) -> None:
    session = host.session

    @host.feature("textDocument/codeAction", convert.CODE_ACTION_OPTIONS, default=[])
    def on_code_action(params):
        uri, an = document(host, params)
        if an is None:
            return []
        span = convert.from_range(an.lines, params.range, session.encoding)
        near = [d for d in session.current_diagnostics(uri) if actions.overlaps(d.span, span)]
        found: list[Action] = actions.quick_fixes(an, near)
        for s in session.suggestions(uri):
            found.append(Action(s.title, "rewrite", session.replacement(uri, s.text)))
        args = commands.arguments(uri, session.docs[uri].doc.version)
        found.append(
            Action(
                "Suggest a schedule (validated: replay, build, verify, time)",
                "rewrite",
                command=(commands.SUGGEST, args),
            )
        )
        found.append(
            Action("Rewrite this schedule (validated, must be faster)", "rewrite", command=(commands.REWRITE, args))
        )
        found.append(Action("Measure the latency of this schedule", "source", command=(commands.MEASURE, args)))
        if params.context.only:
            found = [a for a in found if convert.action_kind_in(a.kind, params.context.only)]
        lsp_diags = convert.diagnostics(near, an.lines, session.encoding, uri)
        return [convert.code_action(a, uri, an.lines, session.encoding, lsp_diags) for a in found]

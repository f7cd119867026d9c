"""The client's commands (`workspace/executeCommand`): what each one does and what it answers.

The names and the contract are the VS Code extension's (vscode-extension/src/commands.ts):
every command takes one argument object

    {uri, version, target, device, trackerAddress, range?, prompt?}

(`range` and `prompt` only for a rewrite; `target`, `device` and `trackerAddress` are the
settings at the time of the request, empty meaning unset) and answers `null`, a string, or

    {message?, error?, content?, language?}

where `content` opens beside the script in `language`. Answers may carry more fields (the
suggestions themselves, for clients that show their own picker); the extension ignores them.

Everything here is plain data over the session and its background work (`background.Background`);
`handlers/commands.py` registers the handlers, `convert.command_request` reads the argument.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import unquote, urlparse

from dragon_dsl.language.diagnostics import Diagnostic, Severity, Span
from dragon_lsp.config import SettingsError

SUGGEST = "dragon.suggestSchedule"
REWRITE = "dragon.rewriteSchedule"
TENSORIR = "dragon.showTensorIR"
CUDA = "dragon.showCudaSource"
MEASURE = "dragon.measureLatency"
LIST_TARGETS = "dragon.listTargets"
#: Every command the server carries out, as `executeCommandProvider` lists them.
COMMANDS = (SUGGEST, REWRITE, TENSORIR, CUDA, MEASURE, LIST_TARGETS)
#: Titles of the work-done progress of the long-running commands.
TITLES = {
    SUGGEST: "Suggesting a schedule",
    REWRITE: "Rewriting the schedule",
    TENSORIR: "Replaying the schedule",
    CUDA: "Generating CUDA source",
    MEASURE: "Measuring latency",
}
#: Argument fields that override the session's settings for one request.
OVERRIDES = ("target", "device", "trackerAddress")
#: Show CUDA source builds for this target when neither the settings nor the script name one.
DEFAULT_CUDA_TARGET = "nvidia/nvidia-h100"


@dataclass(frozen=True)
class Request:
    """A command's argument, read: the document, the settings it overrides, a rewrite's selection
    (lines and columns of the core) and request."""

    uri: str
    version: int | None = None
    overrides: dict = field(default_factory=dict)
    span: Span | None = None
    prompt: str | None = None


def arguments(uri: str, version: int | None) -> list:
    """The arguments of a command a code action carries (the settings are the session's)."""
    return [{"uri": uri, "version": version}]


# ---- answers ----------------------------------------------------------------------------------------


def _error(text: str) -> dict:
    return {"error": text}


def _name(uri: str) -> str:
    """The document's file name, for messages (`file:///w/my%20sched.dragon` -> `my sched.dragon`)."""
    return unquote(PurePosixPath(urlparse(uri).path).name) or uri


def _first_error(diags: list[Diagnostic]) -> str | None:
    for d in diags:
        if d.severity is Severity.ERROR:
            return f"{d.code} (line {d.span.line}): {d.message}"
    return None


def _target_text(target) -> str:
    return target if isinstance(target, str) else json.dumps(target)


async def show_tensorir(bg, req: Request) -> dict:
    """Replay the script in the analysis worker (its diagnostics and facts are published as a
    background replay's) and answer the scheduled module as TVMScript."""
    an = bg.session.analysis(req.uri)
    if an is None:
        return _error("the document is not open")
    if an.has_errors:
        return _error(f"the script has errors: {_first_error(an.diagnostics)}")
    r = await bg.replay(req.uri, script=True)
    if "error" in r:
        return _error(f"the replay failed: {r['error']}")
    if "skipped" in r:
        return _error(r["skipped"])
    failed = _first_error(r["diagnostics"])
    if failed is not None or r.get("script") is None:
        return _error(f"the replay failed: {failed or 'TVM produced no module'}")
    head = f"# Scheduled TensorIR of {_name(req.uri)} (version {r['version']})\n"
    return {"content": head + r["script"], "language": "python"}


async def show_cuda_source(bg, req: Request) -> dict:
    """The CUDA source TVM generates for the replayed script: for the requested or configured target,
    else the script's, else nvidia/nvidia-h100. Needs no GPU."""
    try:
        s = bg.session.settings_for(req.overrides)
    except SettingsError as exc:
        return _error(str(exc))
    an = bg.session.analysis(req.uri)
    if an is None:
        return _error("the document is not open")
    if an.has_errors:
        return _error(f"the script has errors: {_first_error(an.diagnostics)}")
    target = s.target if s.target is not None else an.program.target
    target = target if target is not None else DEFAULT_CUDA_TARGET
    r = await bg.cuda_source(req.uri, target)
    if "error" in r:
        failed = _first_error(r.get("diagnostics", []))
        return _error(f"{r['error']}: {failed}" if failed else r["error"])
    head = f"// CUDA source of {_name(req.uri)} for {_target_text(target)}, generated by TVM\n"
    return {"content": head + r["source"], "language": "cuda-cpp"}


async def measure_latency(bg, req: Request) -> dict:
    """Build, verify and time the script through the measurement engine (the `time` check level): answer
    the latency and the speedups, and publish them as the DRG706 information check-on-save gives."""
    try:
        s = bg.session.settings_for(req.overrides)
    except SettingsError as exc:
        return _error(str(exc))
    r = await bg.check(req.uri, "time", settings=s)
    if "error" in r:
        return _error(r["error"])
    if "skipped" in r:
        an = bg.session.analysis(req.uri)
        failed = _first_error(an.diagnostics) if an is not None else None
        return _error(f"{r['skipped']}: {failed}" if failed else r["skipped"])
    failed = _first_error(r["diagnostics"])
    if failed is not None:
        return _error(failed)
    timed = next((d for d in r["diagnostics"] if d.code == "DRG706"), None)
    if timed is None:
        return _error(f"the latency was not measured (the check reached {r.get('level_reached')})")
    note = " (the script changed while it was measured)" if r.get("stale") else ""
    return {
        "message": f"{_name(req.uri)} ({_target_text(r['target'])}, device {r['device']}): {timed.message}{note}",
        "figures": r.get("figures", {}),
    }


async def suggest(bg, req: Request, mode: str, report: Callable[[str, int | None], None]) -> dict:
    """Suggest ("suggest") or rewrite ("rewrite") the schedule; only validated candidates count: replayed,
    built, verified against the unscheduled workload and timed (a rewrite must also be faster than the
    current schedule). A suggestion opens beside the script; a rewrite replaces it (`workspace/applyEdit`,
    or beside it when the script changed meanwhile or the client declines). All of them stay offered as
    code actions on the version they were computed for."""
    try:
        s = bg.session.settings_for(req.overrides)
    except SettingsError as exc:
        return _error(str(exc))
    lines = (req.span.line, req.span.end_line) if req.span is not None else None
    r = await bg.suggest(req.uri, mode, report, settings=s, prompt=req.prompt or None, lines=lines)
    if "error" in r:
        return _error(r["error"])
    found = r["suggestions"]
    listed = [{"title": x.title, "figures": x.figures, "text": x.text} for x in found]
    more = {"suggestions": listed, "source": r.get("source"), "candidates": r.get("candidates", 0)}
    note = ""
    if (req.prompt or req.span is not None) and r.get("source") == "search":
        note = (
            " The search rewrites the whole schedule and follows no request: the schedule model "
            "(dragon.modelPath) takes the selection and the request."
        )
    if not found:
        why = "no candidate passed replay, build, verify and time" + (
            " and beat the current schedule" if mode == "rewrite" else ""
        )
        return {"message": f"{why} ({r.get('candidates', 0)} tried).{note}", **more}
    best = found[0]
    if mode == "rewrite" and not r["stale"] and await bg.replace_text(req.uri, r["version"], best.text):
        return {"message": f"{best.title}: applied.{note}", "applied": True, **more}
    offered = (
        ""
        if r["stale"]
        else f" {len(found)} validated schedules are offered as code actions on the script."
        if len(found) > 1
        else " It is offered as a code action on the script."
    )
    if mode == "rewrite":
        why = "the script changed meanwhile" if r["stale"] else "the editor did not apply the edit"
        return {
            "content": best.text,
            "language": "dragon",
            "applied": False,
            "message": f"{best.title}. Not applied ({why}): the rewrite opens beside the script.{offered}{note}",
            **more,
        }
    return {"content": best.text, "language": "dragon", "message": f"{best.title}.{offered}{note}", **more}


async def list_targets(bg) -> dict:
    """`{targets, devices}` for the client's target and device pickers."""
    return await bg.list_targets()

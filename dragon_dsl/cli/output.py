"""Findings in the three output formats of dragon-check (text, JSON and SARIF 2.1.0), a workload's
load error for the terminal, and text a command writes to a file or standard output."""

from __future__ import annotations

import json

from dragon_dsl import __version__
from dragon_dsl.cli.render import render_diagnostic
from dragon_dsl.language.diagnostics import CODES, Severity
from dragon_dsl.language.files import write_text


def code(out, text: str, **kw) -> None:
    """TEXT on OUT (a rich Console) as written: no markup, highlighting or wrapping."""
    out.print(text, markup=False, highlight=False, soft_wrap=True, **kw)


def emit(out, text: str, path) -> None:
    """Write text to a file (atomically) when a path is given (`-`: standard output), else to standard
    output; either way it ends with a newline."""
    if path and path != "-":
        write_text(path, text)
    else:
        code(out, text if text.endswith("\n") or not text else text + "\n", end="")


_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def finding(report, d) -> dict:
    s = d.span
    out = {
        "code": d.code,
        "severity": d.severity.value,
        "file": report.path,
        "line": s.line,
        "column": s.column,
        "end_line": s.end_line,
        "end_column": s.end_column,
        "message": d.message,
    }
    if d.related:
        out["related"] = [{"line": r.span.line, "column": r.span.column, "message": r.message} for r in d.related]
    if d.code == "DRG706" and report.figures:
        out["figures"] = report.figures
    return out


def to_json(reports) -> str:
    return json.dumps([finding(r, d) for r in reports for d in r.diagnostics], indent=2, ensure_ascii=False)


def to_sarif(reports, tool_name: str = "dragon-check") -> str:
    used = sorted({d.code for r in reports for d in r.diagnostics})
    rules = [
        {
            "id": code,
            "name": CODES[code][1].title().replace(" ", ""),
            "shortDescription": {"text": CODES[code][1]},
            "defaultConfiguration": {"level": _SARIF_LEVEL[CODES[code][0]]},
        }
        for code in used
    ]
    results = []
    for r in reports:
        for d in r.diagnostics:
            s = d.span
            res = {
                "ruleId": d.code,
                "ruleIndex": used.index(d.code),
                "level": _SARIF_LEVEL[d.severity],
                "message": {"text": d.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": r.path},
                            "region": {
                                "startLine": s.line,
                                "startColumn": s.column,
                                "endLine": s.end_line,
                                "endColumn": max(s.end_column, s.column),
                            },
                        }
                    }
                ],
            }
            if d.related:
                res["relatedLocations"] = [
                    {
                        "id": i,
                        "message": {"text": rel.message},
                        "physicalLocation": {
                            "artifactLocation": {"uri": r.path},
                            "region": {"startLine": rel.span.line, "startColumn": rel.span.column},
                        },
                    }
                    for i, rel in enumerate(d.related)
                ]
            if d.code == "DRG706" and r.figures:
                res["properties"] = {"figures": r.figures}
            results.append(res)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": tool_name, "version": __version__, "rules": rules}}, "results": results}],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)


def to_text(report, source: str) -> list[tuple[str, str, Severity]]:
    """(header, body, severity) per diagnostic, for the console."""
    out = []
    for d in report.diagnostics:
        head, _, body = render_diagnostic(d, source, report.path).partition("\n")
        out.append((head, body, d.severity))
    return out


def print_workload_error(err, exc) -> None:
    """A workload that cannot be loaded (`dragon_dsl.tvm.workload.WorkloadError`): `FILE:LINE:COL: error:
    MESSAGE`, then the offending line with a caret when TVM's parser said where."""
    where = f"{exc.path}:{exc.line}:{exc.column or 1}" if exc.path and exc.line else exc.path
    err.print(f"{where}: error: {exc.reason}" if where else f"error: {exc}", markup=False, highlight=False)
    if exc.snippet():
        err.print(exc.snippet(), markup=False, highlight=False)

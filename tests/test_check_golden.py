"""dragon-check golden cases: one expected JSON output per script and level.

tests/golden/check/NAME.dragon is checked at each level L for which
NAME.L.json exists; `dragon-check --level L --format json` must print exactly
that (latency figures, which vary between runs, are compared by shape).
DRAGON_UPDATE_GOLDEN=1 rewrites the expected files.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import GOLDEN, UPDATE_GOLDEN

from dragon_dsl.cli import check as check_cli

CASES = sorted((GOLDEN / "check").glob("*.*.json"))


_MISMATCH = re.compile(r"\d+ of (\d+) values differ from the reference \(max abs err [^,]+, max rel err [^)]+\)")


def normalize(findings):
    """Measured numbers vary between machines: latencies always, and how many values a
    wrong kernel gets wrong (floating-point contraction differs between CPUs)."""
    for f in findings:
        if f["code"] == "DRG704":
            f["message"] = _MISMATCH.sub(r"<n> of \1 values differ from the reference (<errors>)", f["message"])
        if "figures" in f:
            f["figures"] = {k: type(v).__name__ for k, v in sorted(f["figures"].items())}
            f["message"] = "<latency message>"
    return findings


@pytest.mark.parametrize("expected_path", CASES, ids=[p.name for p in CASES])
def test_check_golden(expected_path, monkeypatch, capsys, tmp_path):
    name, level, _ = expected_path.name.rsplit(".", 2)
    monkeypatch.chdir(expected_path.parent)
    monkeypatch.setenv("DRAGON_CACHE_DIR", str(tmp_path))  # measure for real, never from a user's cache
    # a short task timeout keeps the hanging-kernel case quick
    rc = check_cli.main([f"{name}.dragon", "--level", level, "--format", "json", "--timeout", "8"])
    out = json.loads(capsys.readouterr().out)
    got = {"exit_code": rc, "findings": normalize(out)}
    if UPDATE_GOLDEN:
        expected_path.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert got == json.loads(expected_path.read_text(encoding="utf-8"))


def golden_codes() -> set[str]:
    codes = set()
    for p in CASES:
        codes |= {f["code"] for f in json.loads(p.read_text(encoding="utf-8"))["findings"]}
    return codes

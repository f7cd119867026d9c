"""`tvm.compile.repeated_updates` (part of the compile check on every target): an update a
reduction block runs more than once per initialisation. The cases are data
(data/repeated_update/*.tvmscript, each with its `# expect:` line: the message's start, or ok)."""

from __future__ import annotations

import pytest

from dragon_dsl.tvm.compile import repeated_update_message, repeated_updates
from dragon_dsl.tvm.workload import load_workload

from .engine_helpers import DATA

CASES = sorted((DATA / "repeated_update").glob("*.tvmscript"))


def test_there_are_cases_of_both_kinds():
    firsts = [p.read_text(encoding="utf-8").splitlines()[0] for p in CASES]
    assert "# expect: ok" in firsts and any(f != "# expect: ok" for f in firsts)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path):
    expected = path.read_text(encoding="utf-8").splitlines()[0].removeprefix("# expect: ").strip()
    message = repeated_update_message(repeated_updates(load_workload(str(path))))
    if expected == "ok":
        assert message is None
    else:
        assert message is not None and message.startswith(expected), message

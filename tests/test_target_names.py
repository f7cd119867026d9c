"""dragon_dsl.language.target_names: the table of TVM targets the core checks against, kept fresh."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from dragon_dsl.language import target_names
from dragon_dsl.language.target_names import target_problem

MARK = "# --- generated from TVM by tests/test_target_names.py: do not edit"


def _generate() -> str:
    import tvm

    kinds = sorted(str(k) for k in tvm.target.Target.list_kinds())
    options = {}
    for kind in kinds:
        try:
            tvm.target.Target({"kind": kind, "zz_probe": 1})
        except Exception as exc:  # TVM names the options it knows when it refuses one
            m = re.search(r"Known options: (.*?)\. Target creation", str(exc), re.S)
            options[kind] = tuple(re.findall(r"'([^']+)'", m.group(1))) if m else ()
        else:
            raise AssertionError(f"TVM accepted an unknown option of kind {kind}")
    tags = sorted(str(t) for t in tvm.target.tag.list_tags())
    return "\n".join(
        [
            "KINDS = (\n" + "".join(f"    {k!r},\n" for k in kinds) + ")\n",
            "OPTIONS = {\n" + "".join(f"    {k!r}: {options[k]!r},\n" for k in kinds) + "}\n",
            "TAGS = (\n" + "".join(f"    {t!r},\n" for t in tags) + ")\n",
        ]
    )


def test_the_table_is_what_tvm_accepts():
    pytest.importorskip("tvm")
    path = Path(target_names.__file__)
    text = path.read_text(encoding="utf-8")
    head, _, table = text.partition(MARK)
    head += MARK + table.split("\n", 1)[0] + "\n"
    fresh = _generate()
    if os.environ.get("DRAGON_REGENERATE"):
        path.write_text(head + fresh, encoding="utf-8")
    assert table.split("\n", 1)[1] == fresh, "stale: run DRAGON_REGENERATE=1 pytest tests/test_target_names.py"


@pytest.mark.parametrize(
    "spec",
    [
        "llvm",
        "cuda",
        "nvidia/nvidia-h100",
        {"kind": "llvm", "num-cores": 2},
        {"tag": "nvidia/nvidia-h100"},
        {
            "kind": "cuda",
            "arch": "sm_90a",
            "keys": ["cuda", "gpu"],
            "tag": "",
            "max_threads_per_block": 1024,
            "l2_cache_size_bytes": 52428800,
        },
    ],
)
def test_targets_tvm_accepts_pass(spec):
    assert target_problem(spec) is None


@pytest.mark.parametrize(
    "spec, words",
    [
        ("nosuchtarget", ['unknown target "nosuchtarget"', "kinds: c, composite, cuda"]),
        ("nvidia/nvidia-h10", ['did you mean "nvidia/nvidia-h100"']),
        ("llvm -mcpu=znver3", ["not a command-line string", '{"kind": "llvm"']),
        ({"kind": "llvn"}, ['unknown target kind "llvn"', 'did you mean "llvm"']),
        ({"kind": "llvm", "num_cores": 2}, ['no option "num_cores"', 'did you mean "num-cores"']),
        ({"kind": "llvm", "host": "nosuch"}, ["target host: unknown target"]),
        ({"keys": ["cpu"]}, ['needs a "kind"']),
        (3, ["not 3"]),
    ],
)
def test_targets_tvm_refuses_are_named(spec, words):
    problem = target_problem(spec)
    assert problem is not None
    for w in words:
        assert w in problem


def test_every_refusal_is_one_tvm_makes_too():
    """The table agrees with TVM itself on the cases above and on every tag and kind."""
    tvm = pytest.importorskip("tvm")
    for spec in ["nosuchtarget", {"kind": "llvn"}, {"kind": "llvm", "num_cores": 2}, "llvm -mcpu=znver3"]:
        with pytest.raises(Exception):  # noqa: B017 - TVM raises several error types here
            tvm.target.Target(spec)
    for name in target_names.TAGS[:40] + ("llvm", "c"):
        tvm.target.Target(name)

"""Explanation graphs: golden outputs, and the invariants over every fixture trace.

Invariants: the output checks without errors; it encodes to the same trace as its
input; the same input gives the same bytes; explaining an explained script
changes nothing; `dragon-fmt` leaves the output as it is.
DRAGON_UPDATE_GOLDEN=1 rewrites the expected files.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from conftest import UPDATE_GOLDEN

import dragon_dsl
from dragon_dsl.explain import explain, explain_entries
from dragon_dsl.language.diagnostics import Severity

HERE = Path(__file__).parent
DATA = HERE.parent / "data"
CASES = sorted((HERE / "golden").glob("*.in.dragon"))
LLVM = {"kind": "llvm", "num-cores": 2}


def _errors(text):
    _, diags = dragon_dsl.check_text(text)
    return [f"{d.code} {d.message}" for d in diags if d.severity is Severity.ERROR]


@cache
def _workload(name):
    """One IRModule per workload file, shared by all the traces that schedule it."""
    from dragon_dsl.tvm.workload import load_workload

    return load_workload(DATA / "workloads" / f"{name}.tvmscript")


def _header_workload(path: Path, text: str):
    program, _ = dragon_dsl.check_text(text)
    return path.parent / program.workload, program.target


@pytest.mark.parametrize("path", CASES, ids=[p.name.split(".")[0] for p in CASES])
def test_golden(path):
    src = path.read_text(encoding="utf-8")
    workload, target = _header_workload(path, src)
    got = explain(src, str(workload), target)
    expected = path.with_name(path.name.replace(".in.", ".out."))
    if UPDATE_GOLDEN:
        expected.write_text(got, encoding="utf-8")
    assert got == expected.read_text(encoding="utf-8")
    assert not _errors(got)
    assert dragon_dsl.to_trace_json(got) == dragon_dsl.to_trace_json(src)
    assert explain(got, str(workload), target) == got, "idempotent"
    assert dragon_dsl.format_text(got) == got, "dragon-fmt leaves it as it is"


def _fixtures():
    out = []
    for source in ("handwritten", "design_spaces", "sampled"):
        with open(DATA / "traces" / f"{source}.jsonl", encoding="utf-8") as f:
            for n, line in enumerate(f):
                out.append((source, n, line))
    return out


FIXTURES = _fixtures()


#: the fixture traces in parts of at most this many: one test each, so that xdist spreads them over its workers
PART = 100
PARTS = [
    (source, start)
    for source in ("handwritten", "design_spaces", "sampled")
    for start in range(0, sum(s == source for s, _, _ in FIXTURES), PART)
]


def test_fixture_traces_cover_both_targets():
    assert {json.dumps(json.loads(line)["target"]) for _, _, line in FIXTURES} == {
        json.dumps("nvidia/nvidia-h100"),
        json.dumps(LLVM),
    }


@pytest.mark.parametrize("source, start", PARTS, ids=[f"{s}-{i}" for s, i in PARTS])
def test_every_fixture_trace(source, start):
    """All real traces (llvm and cuda; this part of one fixture file): checks clean, same trace,
    formatted, deterministic; idempotent on the hand-written traces, the design spaces and every 4th
    sampled trace."""
    failures = []
    for _, n, line in [f for f in FIXTURES if f[0] == source][start : start + PART]:
        d = json.loads(line)
        if d.get("needs_tensor_intrin"):
            from dragon_dsl.tvm.intrinsics import register_tensor_intrinsics, tensor_intrin_names

            register_tensor_intrinsics(tensor_intrin_names(d["trace"]))  # those the trace tensorizes, as a replay does
        text = dragon_dsl.from_trace_json(d["trace"], workload=f"{d['workload']}.tvmscript", target=d["target"])
        wl = _workload(d["workload"])
        where = f"{source}:{n + 1} ({d['workload']}, {d['target']})"
        try:
            got = explain(text, wl, d["target"])
            assert "\nexplain:\n" in got
            assert got.startswith(text.rstrip("\n") + "\n"), "the formal part is kept byte for byte"
            assert not _errors(got), _errors(got)
            assert dragon_dsl.to_trace_json(got) == dragon_dsl.to_trace_json(text)
            assert dragon_dsl.format_text(got) == got
            if source != "sampled" or n % 4 == 0:
                assert explain(got, wl, d["target"]) == got
        except Exception as exc:  # collect all, report together
            failures.append(f"{where}: {exc!r}"[:400])
    assert not failures, "\n".join(failures[:10]) + f"\n({len(failures)} failures)"


def _trace(source, workload, target, k=0):
    for _, _, line in ((s, n, ln) for s, n, ln in FIXTURES if s == source):
        d = json.loads(line)
        if d["workload"] == workload and d["target"] == target:
            if k == 0:
                return d
            k -= 1
    raise LookupError(workload)


def _script(source, workload, target, k=0):
    d = _trace(source, workload, target, k)
    return dragon_dsl.from_trace_json(d["trace"], workload=f"{workload}.tvmscript", target=target)


def test_deterministic_bytes():
    text = _script("sampled", "conv2d_nchw_bias_bn_relu_16", "nvidia/nvidia-h100")
    wl = DATA / "workloads" / "conv2d_nchw_bias_bn_relu_16.tvmscript"
    first = explain(text, str(wl), "nvidia/nvidia-h100")
    assert explain(text, wl, "nvidia/nvidia-h100") == first  # a Path or a str
    assert explain(text, _workload("conv2d_nchw_bias_bn_relu_16"), "nvidia/nvidia-h100") == first  # an IRModule


def _entries(text, workload, target):
    entries = explain_entries(text, _workload(workload), target)
    return {e.name: e for e in entries}


def test_cuda_matmul_facts_follow_the_decisions():
    """The tile, launch and shared-memory facts are computed from the script's decisions:
    change a decision and they change with it."""
    text = _script("sampled", "matmul_64", "nvidia/nvidia-h100")
    facts = [e for e in _entries(text, "matmul_64", "nvidia/nvidia-h100").values() if e.kind == "fact"]
    tile = next(f for f in facts if "tiles" in f.data)
    assert tile.data["tiles"]["v_i"] == [2, 1, 2, 1, 16]
    assert tile.data["tile"] == {"v_i": 32, "v_j": 64}
    launch = next(f for f in facts if "threads" in f.data)
    assert (launch.data["blocks"], launch.data["threads"], launch.data["vthreads"]) == (2, 32, 2)
    # keep the thread count (the post-processing binds 32 threads for the cooperative fetch)
    changed = text.replace("decision=[2, 1, 2, 1, 16]", "decision=[1, 1, 2, 1, 32]")
    assert changed != text
    facts = [e for e in _entries(changed, "matmul_64", "nvidia/nvidia-h100").values() if e.kind == "fact"]
    tile = next(f for f in facts if "tiles" in f.data)
    assert tile.data["tile"] == {"v_i": 64, "v_j": 64}
    launch = next(f for f in facts if "threads" in f.data)
    assert (launch.data["blocks"], launch.data["threads"]) == (1, 32)
    shared = {f.data["buffer"]: f.data["bytes"] for f in facts if f.data.get("scope") == "shared"}
    assert shared == {"A_shared": 64 * 64 * 4, "B_shared": 64 * 64 * 4}


def test_every_rationale_is_linked():
    text = _script("sampled", "softmax_64", LLVM)
    entries = _entries(text, "softmax_64", LLVM)
    rationales = [e for e in entries.values() if e.kind == "rationale"]
    assert rationales
    for r in rationales:
        assert r.links.get("produces"), r.text
    program, _ = dragon_dsl.check_text(text)
    produced = {n for r in rationales for n in r.links["produces"]}
    assert produced <= set(program.definitions) | set(program.labels)


def test_without_workload_the_script_alone_is_explained():
    text = _script("design_spaces", "matmul_64", LLVM)
    got = explain(text, None, LLVM)
    assert not _errors(got)
    assert dragon_dsl.to_trace_json(got) == dragon_dsl.to_trace_json(text)
    assert "parallel" in got.split("explain:", 1)[1]


def test_a_script_with_errors_is_refused():
    with pytest.raises(dragon_dsl.DragonError):
        explain('b0 = get_sblock("C")\nsplit(b0, [2, 2])\n', None, LLVM)


def test_cli(tmp_path):
    from dragon_dsl.cli.main import main

    src = CASES[0].read_text(encoding="utf-8")
    script = tmp_path / "s.dragon"
    wl = DATA / "workloads" / "matmul_64.tvmscript"
    text = _script("sampled", "matmul_64", "nvidia/nvidia-h100")
    script.write_text(text, encoding="utf-8")
    out = tmp_path / "out.dragon"
    assert main(["explain", str(script), "--workload", str(wl), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == explain(text, str(wl), "nvidia/nvidia-h100")
    assert main(["explain", str(script), "--workload", str(wl), "--in-place"]) == 0
    assert script.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")
    assert src  # the golden inputs exist

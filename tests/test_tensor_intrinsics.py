"""TVM's tensor intrinsics registered from the user's cache (dragon_dsl/tvm/intrinsics.py) are the
ones TVM's own import registers, and a trace that tensorizes replays to the same module either way.

Each case runs in a fresh process with its own cache folder: registration is per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA, read_jsonl

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("tvm")

# the handwritten line that tensorizes (an int8 dot product of TVM's x86 intrinsics)
LINE = next(x for x in read_jsonl(DATA / "traces" / "handwritten.jsonl") if x.get("needs_tensor_intrin"))

SCRIPT = r"""
import json, sys, time
from pathlib import Path
import tvm
import tvm_ffi
from tvm.s_tir import TensorIntrin
from dragon_dsl.tvm import intrinsics as I
from dragon_dsl.tvm.trace import apply
from dragon_dsl.tvm.workload import load_workload

mode, workload, trace_file = sys.argv[1:4]
trace = json.loads(Path(trace_file).read_text())
out = {}
t0 = time.perf_counter()
if mode == "full":
    I.register_tensor_intrinsics()
    folder = I.cache_folder()
    names = json.loads((folder / "index.json").read_text())["names"]
    differ = []
    for name in names:
        data = json.loads((folder / I._file_name(name)).read_text())
        reg = TensorIntrin.get(name)
        if not (tvm_ffi.structural_equal(tvm.ir.load_json(data["desc"]), reg.desc)
                and tvm_ffi.structural_equal(tvm.ir.load_json(data["impl"]), reg.impl)):
            differ.append(name)
    out.update(cached=len(names), differ=differ)
elif mode == "damaged":
    names = sorted(I.tensor_intrin_names(trace))
    out["from_cache"] = I._register_from_cache(names)
    out["registered"] = [n for n in names if TensorIntrin.get(n, allow_missing=True) is not None]
    print(json.dumps(out))
    sys.exit(0)
else:
    I.register_tensor_intrinsics(I.tensor_intrin_names(trace))
    out["imported_tvm_modules"] = "tvm.s_tir.tensor_intrin" in sys.modules
out["seconds"] = time.perf_counter() - t0
mod = apply(trace, load_workload(workload)).mod
out["module"] = tvm.ir.save_json(mod)
if mode == "cached":
    with I._frames_outside_modules():   # (the same import, without a minute of inspect's module search)
        import tvm.s_tir.tensor_intrin  # TVM's modules still import after a registration from the cache
    out["imported_after"] = True
print(json.dumps(out))
"""


def _run(mode: str, cache: Path, tmp_path: Path) -> dict:
    trace_file = tmp_path / "trace.json"
    trace_file.write_text(json.dumps(LINE["trace"]))
    env = dict(os.environ, DRAGON_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    workload = str(DATA / "workloads" / f"{LINE['workload']}.tvmscript")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode, workload, str(trace_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_cached_intrinsics_equal_tvms_replay_the_same_and_a_damaged_cache_is_not_used(tmp_path):
    import tvm

    cache = tmp_path / "cache"
    full = _run("full", cache, tmp_path)  # TVM's own import (seconds), which fills the cache
    assert full["cached"] > 100 and full["differ"] == []
    cached = _run("cached", cache, tmp_path)
    assert cached["imported_tvm_modules"] is False and cached["imported_after"] is True
    assert cached["seconds"] < full["seconds"]
    tvm.ir.assert_structural_equal(tvm.ir.load_json(cached["module"]), tvm.ir.load_json(full["module"]))

    (folder,) = cache.iterdir()
    files = [f for f in folder.glob("*.json") if f.name != "index.json"]
    for f in files:
        f.write_text("{not json")
    damaged = _run("damaged", cache, tmp_path)
    assert damaged["from_cache"] is False and damaged["registered"] == []  # then TVM's own import runs


def test_a_script_that_tensorizes_replays_in_a_process_that_registered_no_intrinsic(tmp_path):
    """`dragon-check --level replay` (and the decoder's replay, the same `apply`) registers the
    intrinsics a script tensorizes with: before, every tensor-core script failed there with
    "TensorIntrin ... is not registered" although it built."""
    import dragon_dsl

    workload = f"{LINE['workload']}.tvmscript"
    (tmp_path / workload).write_text((DATA / "workloads" / workload).read_text())
    script = tmp_path / "tensorized.dragon"
    script.write_text(dragon_dsl.from_trace_json(LINE["trace"], workload=workload, target=LINE["target"]))
    assert "tensorize(" in script.read_text()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from dragon_dsl.cli.entry import dragon_check; dragon_check()",
            "--level",
            "replay",
            str(script),
        ],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "0 error(s)" in done.stdout + done.stderr

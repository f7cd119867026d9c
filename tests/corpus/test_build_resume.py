"""`dragon corpus build` killed with SIGKILL mid-build and started again ends with the corpus an
uninterrupted build gives: every workload's examples once, nothing measured twice.

What "the same" compares: the build re-measures every script, so latencies (and with them the
improvement examples dropped because a slower script was no longer slower enough) differ between
any two builds; construction examples, their scripts and traces, splits and workload texts do not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dragon_dsl.corpus.build import PARTIAL, Partial, load_corpus
from dragon_dsl.corpus.search_run import RunConfigError

from .conftest import ROOT, SPECS, build_config, kill_when

CONSTRUCTION = ("id", "task", "split", "family", "workload", "workload_hash", "workload_text", "script", "trace")


def build_command(run_dir, out, *extra) -> list:
    cfg = build_config()
    return [
        sys.executable,
        "-m",
        "dragon_dsl.cli.corpus",
        "corpus",
        "build",
        str(run_dir),
        "--out",
        str(out),
        "--test-families",
        ",".join(cfg.test_families),
        "--shape-pct",
        str(cfg.shape_pct),
        "--valid-pct",
        str(cfg.valid_pct),
        "--split-seed",
        str(cfg.split_seed),
        "--workers",
        "2",
        *extra,
    ]


def construction_rows(corpus) -> dict:
    _, splits = load_corpus(corpus)
    rows = [dict(r) for s in splits.values() for r in s]
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "no duplicate examples"
    return {r["id"]: {k: r[k] for k in CONSTRUCTION} for r in rows if r["task"] == "construction"}


def test_sigkill_mid_build_then_restart_equals_uninterrupted(searched_run, built_corpus, tmp_path):
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kill_when(
        build_command(searched_run, out, "--chunk", "1"),
        lambda: any(p.name != "build.json" for p in out.glob(f"{PARTIAL}/*.json")),
        "measured workload",
    )
    measured = {p.stem for p in (out / PARTIAL).glob("*.json") if p.name != "build.json"}
    assert 1 <= len(measured) < len(SPECS), "killed mid-build: some workloads measured, some not"
    assert not (out / "manifest.json").exists()

    again = subprocess.run(
        build_command(searched_run, out), cwd=ROOT, capture_output=True, text=True, timeout=600, env=env
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"resuming: {len(measured)} of {len(SPECS)} workloads measured before" in again.stderr
    assert not (out / PARTIAL).exists(), "the partial folder goes once the corpus is written"
    manifest = json.loads((out / "manifest.json").read_text())
    reference, _ = built_corpus
    assert construction_rows(out) == construction_rows(reference)
    assert len(construction_rows(out)) == len(SPECS)
    assert manifest["counts"]["examples"] == sum(
        v for part in manifest["counts"]["by_split"].values() for v in part.values()
    )


def test_partial_build_of_another_configuration_is_refused(tmp_path):
    ident = {
        "build": {"slower": 1.2},
        "target": {"kind": "llvm"},
        "tvm_version": "0.27.0.post1",
        "workloads": ["a", "b"],
    }
    part = {"rows": [{"id": "a/construction"}], "dropped": {}, "wall_s": 1.5}
    first = Partial(tmp_path / PARTIAL, ident)
    assert first.open() == {}
    first.write("a", part)
    assert Partial(tmp_path / PARTIAL, ident).open() == {"a": part}
    other = {**ident, "build": {"slower": 1.5}}
    with pytest.raises(RunConfigError, match=r"another configuration \(differs in: build\)"):
        Partial(tmp_path / PARTIAL, other).open()
    first.remove()
    assert not (tmp_path / PARTIAL).exists()

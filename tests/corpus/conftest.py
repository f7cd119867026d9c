"""Shared fixtures of the corpus tests: tiny llvm workloads, one uninterrupted search run (a real
`dragon search` subprocess), one engine and one corpus built from that run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LLVM = {"kind": "llvm", "num-cores": 2}
BUDGET = 3
# matmul twice (two shapes: one can go to test_shape), softmax and elementwise: three families
SPECS = [
    ("matmul", {"n": 16, "m": 16, "k": 16, "in_dtype": "float32", "out_dtype": "float32"}),
    ("matmul", {"n": 32, "m": 16, "k": 32, "in_dtype": "float32", "out_dtype": "float32"}),
    ("softmax", {"m": 32, "n": 32}),
    ("elementwise", {"m": 32, "n": 32, "ops": "add-relu"}),
]


def search_command(workloads: Path, out: Path, *extra: str) -> list:
    """`dragon search` as a subprocess (through the corpus CLI module, so that unrelated `dragon`
    subcommands are not imported): one search round with the seeded random cost model, which
    makes the candidates reproducible (see dragon_dsl/corpus/search_run.py)."""
    return [
        sys.executable,
        "-m",
        "dragon_dsl.cli.corpus",
        "search",
        str(workloads),
        "--out",
        str(out),
        "--target",
        json.dumps(LLVM),
        "--budget",
        str(BUDGET),
        "--cost-model",
        "random",
        "--workers",
        "2",
        "--population",
        "32",
        "--json",
        "-",
        *extra,
    ]


def run_search(workloads: Path, out: Path, *extra: str) -> dict:
    proc = subprocess.run(
        search_command(workloads, out, *extra),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def kill_when(cmd: list, ready, what: str) -> None:
    """Run `cmd` in its own process group and SIGKILL the group (the command and its engine
    workers, mid-run) as soon as `ready()` holds; `what` names the awaited progress."""
    import signal
    import time

    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + 300
        while not ready():
            assert proc.poll() is None, f"the command ended before {what}"
            assert time.monotonic() < deadline, f"no {what} within 300 s"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture(scope="session")
def tiny_workloads(tmp_path_factory) -> Path:
    from dragon_dsl.corpus.generator import WorkloadSpec, write

    folder = tmp_path_factory.mktemp("workloads")
    write([WorkloadSpec(f, tuple(sorted(p.items()))) for f, p in SPECS], folder)
    return folder


@pytest.fixture(scope="session")
def searched_run(tiny_workloads, tmp_path_factory) -> Path:
    """An uninterrupted run over the tiny workloads."""
    out = tmp_path_factory.mktemp("run") / "uninterrupted"
    summary = run_search(tiny_workloads, out)
    assert summary["done"] == len(SPECS) and summary["failed"] == 0
    return out


@pytest.fixture(scope="session")
def corpus_engine(tmp_path_factory):
    from dragon_dsl.engine import Engine

    engine = Engine(LLVM, workers=2, timeout_s=60.0, cache=False)
    yield engine
    engine.close()


def build_config():
    """softmax held out; the first split seed that sends some of the other workloads to test_shape
    and keeps some in train (with three workloads, a fixed seed could send all one way)."""
    from dragon_dsl.corpus.build import BuildConfig, split_of

    for seed in range(100):
        cfg = BuildConfig(improvements=2, test_families=("softmax",), shape_pct=50, valid_pct=0, split_seed=seed)
        splits = {split_of(f, p, ["softmax"], cfg) for f, p in SPECS if f != "softmax"}
        if splits == {"train", "test_shape"}:
            return cfg
    raise AssertionError("no split seed below 100 gives both train and test_shape")


@pytest.fixture(scope="session")
def built_corpus(searched_run, corpus_engine, tmp_path_factory):
    from dragon_dsl.corpus.build import build_corpus

    out = tmp_path_factory.mktemp("corpus")
    manifest = build_corpus([searched_run], out, build_config(), engine=corpus_engine)
    return out, manifest

"""The run's bookkeeping without building a network: which networks a run extracts, skips or retries."""

from __future__ import annotations

import json

import pytest

from dragon_dsl.corpus.networks import driver


@pytest.fixture
def extracted_names(monkeypatch):
    """Extraction replaced by a record written at once: the names the run asked for, in order."""
    names = []

    def fake(network, path, log):
        names.append(network.name)
        path.write_text(json.dumps({"network": network.name, "variants": [{"error": None}], "tasks": []}))
        return ""

    monkeypatch.setattr(driver, "_run_here", fake)
    return names


def _record(out, name, error):
    path = driver.record_path(out, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"network": name, "variants": [{"error": error}], "tasks": []}), encoding="utf-8")


@pytest.mark.parametrize(
    "error, retry, extracted",
    [(None, False, []), (None, True, []), ("TypeError: x", False, []), ("TypeError: x", True, ["toy-convnet"])],
)
def test_a_finished_network_is_skipped_unless_it_failed_and_failures_are_retried(
    tmp_path, extracted_names, error, retry, extracted
):
    _record(tmp_path, "toy-convnet", error)
    summary = driver.run(tmp_path, ["toy-convnet", "toy-llama"], retry_failed=retry, log=lambda line: None)
    assert extracted_names == [*extracted, "toy-llama"]
    assert summary["skipped"] == ([] if extracted else ["toy-convnet"])


def test_a_stray_temporary_of_a_killed_writer_is_removed(tmp_path, extracted_names):
    folder = tmp_path / driver.RECORDS
    folder.mkdir()
    stray = folder / ".toy-llama.json.abcdef.999999999.tmp"  # no process has this pid
    stray.write_text("{", encoding="utf-8")
    driver.run(tmp_path, ["toy-llama"], log=lambda line: None)
    assert not stray.exists() and extracted_names == ["toy-llama"]


def test_the_summary_counts_distinct_tasks_and_names_failed_variants(tmp_path):
    for name, ids, error in [("a", ["1", "2"], None), ("b", ["2", "3"], "TypeError: x")]:
        path = driver.record_path(tmp_path, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "network": name,
            "seconds": 2.0,
            "tasks": [{"id": i} for i in ids],
            "variants": [{"variant": "v1", "error": None}, {"variant": "v2", "error": error}],
        }
        path.write_text(json.dumps(record), encoding="utf-8")
    lines = driver.summary_table(tmp_path).splitlines()
    assert "failed" not in lines[0] and lines[1].endswith("failed: v2")
    assert lines[-1] == "2 networks, 3 distinct tasks, 4 s"

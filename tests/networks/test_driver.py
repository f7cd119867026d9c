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

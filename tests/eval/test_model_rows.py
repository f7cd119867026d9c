"""The evaluation's model rows when the model cannot run here: a machine without the decoder's
dependencies (the H200 machine has no xgrammar: answers are generated elsewhere) must give
"not available", never an unsolved task that would count against the model."""

from pathlib import Path

import pytest

from dragon_dsl.engine.targets import resolve_target
from dragon_dsl.eval import methods as m
from dragon_dsl.eval.discover import WorkloadEntry

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ctx_entry(tmp_path):
    ctx = m.Context(None, tmp_path, m.WallTimes(tmp_path / "cache" / "wall_times.json"), target=resolve_target("llvm"))
    path = ROOT / "tests/data/workloads/matmul_64.tvmscript"
    return ctx, WorkloadEntry(name="matmul_64", path=path, family="matmul")


@pytest.mark.parametrize(
    "error, status, reason",
    [
        (ImportError("No module named 'xgrammar'"), "not_available", "the model cannot generate here"),
        (FileNotFoundError("no weights"), "not_available", "no model"),
        (RuntimeError("derailed"), "measured", "suggest() raised RuntimeError: derailed"),
    ],
    ids=["missing-dependency", "no-weights", "model-failure"],
)
def test_a_model_that_cannot_answer(ctx_entry, monkeypatch, error, status, reason):
    import dragon_model

    def suggest(**kw):
        raise error

    monkeypatch.setattr(dragon_model, "suggest", suggest)
    ctx, entry = ctx_entry
    row = m.model(ctx, entry, 1)
    assert row["status"] == status and reason in row["reason"]
    assert not list((ctx.out_dir / "model").glob("*.json")), "nothing stored: a later run generates again"


def test_answers_of_another_decoder_version(ctx_entry, monkeypatch):
    """--generation-version N measures the stored answers of decoder version N; one that is not
    stored is "not available" (this code cannot write another version's answers), never generated."""
    import dragon_model

    calls = []
    monkeypatch.setattr(dragon_model, "suggest", lambda **kw: calls.append(kw) or ["script"])
    ctx, entry = ctx_entry
    current = m.generation_version()
    ctx.generation_version = current - 1
    row = m.model(ctx, entry, 1)
    assert row["status"] == "not_available" and f"no answers of decoder version {current - 1}" in row["reason"]
    assert calls == [] and not list((ctx.out_dir / "model").glob("*.json"))
    # stored answers of that version (as a run of the older code wrote them) are found under their key
    path = m.suggestions_path(ctx, entry, 1, "construction", None)
    path.parent.mkdir(parents=True)
    path.write_text('{"scripts": ["not a script"], "generation_s": 1.5, "host": null}')
    row = m.model(ctx, entry, 1)
    assert row["status"] == "measured" and row["generation_s"] == 1.5 and calls == []
    assert row["candidates"][0]["status"] == "parse_error"
    # and this code's own version generates as usual, under another key
    ctx.generation_version = None
    assert m.suggestions_path(ctx, entry, 1, "construction", None) != path


def test_loading_the_model_is_start_up_not_generation(ctx_entry, monkeypatch):
    """The model's load (once per process) is timed apart from each answer's generation: the first
    answer of a process reports it, later ones report 0, and the stored answer keeps it."""
    import time

    import dragon_model
    from dragon_dsl.eval import model_answers

    loads = []

    def suggest(**kw):
        time.sleep(0.05)
        return ["not a script"]

    def load(model_path=None, target=None):
        if not loads:
            time.sleep(0.3)
        loads.append((model_path, target))

    suggest.load = load
    monkeypatch.setattr(dragon_model, "suggest", suggest)
    ctx, entry = ctx_entry
    first = m.model(ctx, entry, 1)
    again = m.model(ctx, entry, 1, task="improvement", script="x")
    assert first["model_load_s"] >= 0.3 and first["generation_s"] < 0.3
    assert again["model_load_s"] < 0.3 and len(loads) == 2
    stored = model_answers._suggestions(ctx, entry, suggest, 1, "construction", None)
    assert stored[3] == first["model_load_s"] and len(loads) == 2, "a stored answer is not generated again"


def test_answers_follow_the_weights_not_the_folder(ctx_entry, tmp_path):
    """Answers written with a model folder are found under a copy of it elsewhere (the same weights
    and decoding settings), and not under a model whose weights or settings differ."""
    import shutil

    ctx, entry = ctx_entry
    first = tmp_path / "gen" / "m-ft"
    first.mkdir(parents=True)
    (first / "model.safetensors").write_bytes(b"weights")
    (first / "dragon_model.json").write_text('{"canonical_names": "all"}')

    def path_under(folder):
        ctx.model_path, ctx.hashes = str(folder), {}
        return m.suggestions_path(ctx, entry, 1, "construction", None)

    written = path_under(first)
    copy = shutil.copytree(first, tmp_path / "shipped")
    assert path_under(copy) == written
    (copy / "dragon_model.json").write_text('{"canonical_names": null}')
    assert path_under(copy) != written
    (copy / "dragon_model.json").write_text('{"canonical_names": "all"}')
    (copy / "model.safetensors").write_bytes(b"other weights")
    assert path_under(copy) != written

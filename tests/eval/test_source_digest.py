"""An evaluation report names the code that ran by content (`little_dragon_source`): a copy of the
working tree on a GPU host may carry another commit's git metadata, so its commit id can be stale."""

from dragon_dsl.eval.harness import SOURCE_DIRS, source_digest, versions


def _tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_digest_follows_the_sources_and_nothing_else(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    files = {"dragon_dsl/x.py": "x = 1\n", "model/y.py": "y = 2\n", "grammar/g.lark": 'start: "a"\n'}
    _tree(a, files)
    _tree(b, files)
    assert source_digest(a) == source_digest(b)
    _tree(b, {"model/notes.md": "not code\n", "model/weights/w.safetensors": "weights", "README.md": "docs\n"})
    assert source_digest(a) == source_digest(b), "only Python files and grammars count"
    _tree(b, {"model/y.py": "y = 3\n"})
    assert source_digest(a) != source_digest(b)
    _tree(b, {"model/y.py": "y = 2\n", "lsp/z.py": "z = 0\n"})
    assert source_digest(a) != source_digest(b), "a new file counts"
    assert set(SOURCE_DIRS) >= {"dragon_dsl", "model"}


def test_reports_carry_the_digest():
    assert len(versions()["little_dragon_source"]) == 16

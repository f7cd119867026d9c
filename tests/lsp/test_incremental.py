"""The incremental analysis (a new version reuses the previous one's statements and check results)
gives exactly what the language core gives for the whole text, edit after edit."""

from __future__ import annotations

import random

from dragon_dsl import check, parse
from dragon_dsl.language.syntax.parser import logical_lines
from dragon_lsp.analysis import Analysis, EarlierAnalysis
from dragon_lsp.incremental import changed_region, recut
from tests.lsp.helpers import SCRIPT

PIECES = [
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    ":",
    '"',
    "\n",
    " ",
    "#",
    "split",
    "l1",
    "b0",
    "v4",
    "_",
    "x",
    "\\\n",
    "-",
    "1",
    "None",
    "explain:\n",
    "postproc:\n",
    "\t",
    "decision=",
    "lambda i, j: (i, j // 4)",
    'bind(l1, "threadIdx.x")\n',
    "get_loops(b0)\n",
    "x = ",
    "  ",
    "tile_i: ",
    "\n\n",
]


def blocks(n: int) -> str:
    """n blocks of a tiled-matmul schedule (distinct names per block), no header."""
    out = []
    for k in range(n):
        out += [
            f'b{k} = get_sblock("C{k}")',
            f"i{k}, j{k}, r{k} = get_loops(b{k})",
            f"t{k}_0, t{k}_1 = sample_perfect_tile(i{k}, n=2, max_innermost_factor=16, decision=[8, 8])",
            f"io{k}, ii{k} = split(i{k}, [t{k}_0, t{k}_1])",
            f"reorder(io{k}, j{k}, ii{k}, r{k})",
            f"v{k} = fuse(j{k}, ii{k})",
            f"vectorize(v{k})",
        ]
    return "\n".join(out) + "\n"


def _same(an: Analysis, text: str):
    script, syntax = parse(text)
    program, types = check(script)
    key = lambda d: (d.code, tuple(d.span), d.message, tuple((tuple(r.span), r.message) for r in d.related))  # noqa: E731
    assert sorted(map(key, an.diagnostics)) == sorted(map(key, syntax + types)), text
    assert an.program.definitions == program.definitions
    assert an.program.labels == program.labels
    assert [(i.entry.name, i.outputs, i.label, i.stmt.span) for i in an.program.instructions] == [
        (i.entry.name, i.outputs, i.label, i.stmt.span) for i in program.instructions
    ]


def test_random_edits_give_the_cores_answers():
    rng = random.Random(24)
    n = 0
    for base in (SCRIPT, blocks(12), SCRIPT + blocks(6)):
        for _ in range(25):
            text = base
            an = Analysis(text, 0)
            for version in range(1, 7):
                i = rng.randrange(len(text) + 1)
                j = min(len(text), i + rng.choice([0, 0, 1, 2, 6, 40]))
                text = text[:i] + "".join(rng.choice(PIECES) for _ in range(rng.randrange(3))) + text[j:]
                an = Analysis(text, version, previous=an)
                _same(an, text)
                n += 1
    assert n >= 450


def test_the_cut_follows_the_edit():
    rng = random.Random(5)
    for _ in range(300):
        old = blocks(4)
        i = rng.randrange(len(old) + 1)
        new = old[:i] + rng.choice(PIECES) + old[i + rng.choice([0, 1, 3]) :]
        p, a, b = changed_region(old, new)
        assert old[:p] == new[:p] and old[a:] == new[b:]
        assert recut(old, logical_lines(old), new)[0] == logical_lines(new)


def test_a_keystroke_reuses_what_it_did_not_touch():
    text = blocks(400)  # 2,800 statements
    an = Analysis(text, 1)
    at = text.index("decision=[8, 8]", len(text) // 2) + len("decision=[")
    edited = text[:at] + "4" + text[at + 1 :]
    new = Analysis(edited, 2, previous=an)
    _same(new, edited)
    same = sum(a is b for a, b in zip(an.statements, new.statements))
    assert same == len(an.statements) - 1  # the edited statement alone was parsed again
    kept = sum(a is b for a, b in zip(an.program.instructions, new.program.instructions))
    assert kept >= len(an.program.instructions) - 200  # only its segment was checked again
    broken = Analysis(edited.replace("vectorize(v200)", "vectorize(v200"), 3, previous=new)
    assert [d.code for d in broken.diagnostics if d.severity.value == "error"] == ["DRG003"]


def _items(an, line, col):
    from dragon_lsp.features import completion

    got = completion.complete(an, line, col, blocks=["C", "root"], workload_files=["m.tvmscript"])
    return [(e.label, e.kind, e.detail, e.replace, e.sort) for e in got], got.incomplete


def test_completion_before_the_analysis_of_a_keystroke_gives_the_current_answer():
    """Right after an edit, completion may answer from the previous analysis (read through the new
    lines) only where that gives exactly what the new version's analysis gives."""
    from lsprotocol import types as lsp

    from dragon_lsp.session import Session

    rng = random.Random(10)
    earlier = n = 0
    for base in (SCRIPT, blocks(12), SCRIPT + blocks(6)):
        for _ in range(20):
            session = Session(lambda *a: None, lambda *a: None)
            session.open("file:///s.dragon", base, 0)
            session.analysis("file:///s.dragon")
            text = base
            for version in range(1, 5):
                lines = text.split("\n")
                li = rng.randrange(len(lines))
                ch = rng.randrange(len(lines[li]) + 1)
                piece = "".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 3)))
                at = lsp.Position(line=li, character=ch)
                session.change(
                    "file:///s.dragon",
                    [lsp.TextDocumentContentChangePartial(range=lsp.Range(start=at, end=at), text=piece)],
                    version,
                )
                text = session.docs["file:///s.dragon"].doc.text
                new_lines = text.split("\n")
                for _k in range(3):  # at the end of the inserted text, then anywhere
                    if _k == 0:
                        cl = li + piece.count("\n")
                        cc = len(piece.rsplit("\n", 1)[-1]) + (ch if "\n" not in piece else 0)
                    else:
                        cl = rng.randrange(len(new_lines))
                        cc = rng.randrange(len(new_lines[cl]) + 1)
                    an, line, col = session.analysis_before("file:///s.dragon", lsp.Position(line=cl, character=cc))
                    earlier += isinstance(an, EarlierAnalysis)
                    assert _items(an, line, col) == _items(Analysis(text, version), line, col), (text, line, col)
                    n += 1
                session.analysis("file:///s.dragon")  # the debounced analysis of this version
    assert n >= 600 and earlier >= n // 4, (n, earlier)


def test_completion_below_an_edited_argument_answers_without_a_new_analysis():
    """A keystroke in an argument above the cursor (a tile decision) leaves every definition as it
    was: completion on the next line reads the last analysis, and gets the current answer."""
    from lsprotocol import types as lsp

    from dragon_lsp.session import Session

    text = blocks(40)
    lines = text.split("\n")
    tile = next(i for i, s in enumerate(lines) if s.startswith("t20_0"))
    col = lines[tile].index("[8, 8]") + 1
    session = Session(lambda *a: None, lambda *a: None)
    session.open("file:///s.dragon", text, 0)
    session.analysis("file:///s.dragon")
    for version, (new, used) in enumerate(
        [("4", True), ("x", True), ("(", False), ("8", False), ("8, 1", True), ("", False)], 1
    ):
        at = lsp.Range(start=lsp.Position(line=tile, character=col), end=lsp.Position(line=tile, character=col + 1))
        session.change("file:///s.dragon", [lsp.TextDocumentContentChangePartial(range=at, text=new)], version)
        text = session.docs["file:///s.dragon"].doc.text
        below = lsp.Position(line=tile + 1, character=len("io20, ii20 = split("))
        an, line, col_ = session.analysis_before("file:///s.dragon", below)
        assert isinstance(an, EarlierAnalysis) is used, (new, an)
        assert _items(an, line, col_) == _items(Analysis(text, version), line, col_)
        if not used:
            session.analysis("file:///s.dragon")

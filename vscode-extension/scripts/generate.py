"""Write the editor files that are derived from the instruction table.

Run from the repository root with the project's Python:

    .venv/bin/python vscode-extension/scripts/generate.py          # write the files
    .venv/bin/python vscode-extension/scripts/generate.py --check  # exit 1 when one is stale

It writes, all committed (tests/test_vscode_generated.py fails when one is stale):

- `syntaxes/dragon.tmLanguage.json`: the TextMate grammar. The Lark grammar knows no
  instruction names; this one does, because an editor colours `split(` differently from an
  unknown call before any server answers. Every name it knows comes from `dragon_dsl.language.table`
  (instructions, sampling instructions, sections, directives, explanation entries, reserved
  constants, data types, storage scopes, thread axes) or from the index-map codec (the
  functions a lambda may call). Lexical rules follow `grammar/dragon.lark`.
- `snippets/dragon.json`: one snippet per instruction with its required parameters
  (what the canonical form writes), per directive, section and explanation entry.
- `test/grammar/instructions.test.dragon`: a `vscode-tmgrammar-test` case with every
  instruction written as its snippet expands, so adding an instruction to the table adds
  its highlighting test.

Output is deterministic: the same table gives the same bytes (UTF-8, `\\n` line ends, names in
the table's order, alternations longest first).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

EXT = Path(__file__).resolve().parent.parent
ROOT = EXT.parent
sys.path.insert(0, str(ROOT))  # the generator runs from a checkout, installed or not
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its own modules (tm_grammar)

from tm_grammar import EXPLAIN_SECTION, HEADER, SCOPE, grammar  # noqa: E402

from dragon_dsl.language.table import (  # noqa: E402
    BUFFER_KINDS,
    DIRECTIVES,
    DTYPES,
    EXPLAIN_KINDS,
    INSTRUCTIONS,
    RESULT_PREFIX,
    STORAGE_SCOPES,
    THREAD_AXES,
    Instruction,
    Param,
)

GRAMMAR = EXT / "syntaxes" / "dragon.tmLanguage.json"
SNIPPETS = EXT / "snippets" / "dragon.json"
INSTRUCTION_TEST = EXT / "test" / "grammar" / "instructions.test.dragon"


# ---- snippets ------------------------------------------------------------------------------


class Body:
    """Builds one snippet body and, alongside, the text it expands to with every default."""

    def __init__(self) -> None:
        self.n = 0
        self.parts: list[str] = []
        self.plain: list[str] = []

    def text(self, t: str) -> Body:
        self.parts.append(t.replace("\\", "\\\\").replace("$", "\\$"))
        self.plain.append(t)
        return self

    def placeholder(self, default: str) -> Body:
        self.n += 1
        self.parts.append("${%d:%s}" % (self.n, default.replace("\\", "\\\\").replace("$", "\\$").replace("}", "\\}")))
        self.plain.append(default)
        return self

    def choice(self, options) -> Body:
        self.n += 1
        for o in options:
            assert not re.search(r"[,|$}\\]", o), o
        self.parts.append("${%d|%s|}" % (self.n, ",".join(options)))
        self.plain.append(options[0])
        return self

    @property
    def snippet(self) -> str:
        return "".join(self.parts)

    @property
    def expanded(self) -> str:
        return "".join(self.plain)


EXAMPLE_FACTORS = ("None", "32")  # split and loop_partition: two factors, the first one inferred
EXAMPLE_N = 2  # sample_*_tile: two factors


def _argument(body: Body, p: Param) -> None:
    """A placeholder for one required parameter, by its type."""
    t = p.type
    if t in ("block", "loop", "value", "location", "block|loop", "loop|list[block]"):
        body.placeholder(p.name)
    elif t == "factor":
        body.placeholder("None")
    elif t == "list[factor]":
        body.text("[")
        for k, f in enumerate(EXAMPLE_FACTORS):
            if k:
                body.text(", ")
            body.placeholder(f)
        body.text("]")
    elif t == "list[block]":
        body.text("[").placeholder("b0").text("]")
    elif t in ("list[int]", "list[float]"):
        body.text("[").placeholder("1, 2" if t == "list[int]" else "0.5, 0.5").text("]")
    elif t == "int":
        body.placeholder(str(EXAMPLE_N) if p.name == "n" else "0")
    elif t == "float":
        body.placeholder("1.0")
    elif t == "bool":
        body.choice(["True", "False"])
    elif t == "str":
        body.text('"').placeholder(p.name).text('"')
    elif t == "scope":
        body.text('"').choice(list(STORAGE_SCOPES)).text('"')
    elif t == "thread":
        body.text('"').choice(list(THREAD_AXES)).text('"')
    elif t == "dtype":
        body.text('"').choice(list(DTYPES)).text('"')
    elif t == "buffer_kind":
        body.text('"').choice(list(BUFFER_KINDS)).text('"')
    elif t == "buffer":
        body.choice(list(BUFFER_KINDS)).text("(").placeholder("0").text(")")
    elif t in ("index_map", "index_map?"):
        body.text("lambda ").placeholder("i, j").text(": (").placeholder("i, j").text(")")
    elif t == "any":
        body.placeholder("1")
    else:  # a new type in the table must be given a placeholder here
        raise ValueError(f"no snippet placeholder for type {t!r} ({p.name})")


def _result_names(inst: Instruction) -> list[str]:
    r = inst.results
    prefix = RESULT_PREFIX[r.kind]
    if r.count == "factors":
        count = len(EXAMPLE_FACTORS)
    elif r.count == "n":
        count = EXAMPLE_N
    elif r.count == "*":
        count = 3 if r.kind == "loop" else 1
    else:
        count = r.count
    return [f"{prefix}{k}" for k in range(1, count + 1)]


def instruction_body(inst: Instruction) -> Body:
    body = Body()
    if inst.section:
        return body.text(f"{inst.section}:")
    if inst.results.count:
        names = _result_names(inst)
        if inst.results.count == "*":
            body.placeholder(", ".join(names))  # one placeholder: the count is known at replay
        else:
            for k, n in enumerate(names):
                if k:
                    body.text(", ")
                body.placeholder(n)
        body.text(" = ")
    body.text(f"{inst.name}(")
    first = True
    for p in inst.params:
        if not p.required:
            continue  # the canonical form omits defaults; completion offers the rest
        if not first:
            body.text(", ")
        first = False
        if p.keyword:
            body.text(f"{p.name}=")
        if p.variadic:  # fuse(*loops), reorder(*loops), merge(*loops)
            body.placeholder(f"{p.name[:-1]}0").text(", ").placeholder(f"{p.name[:-1]}1")
        else:
            _argument(body, p)
    return body.text(")")


def snippets() -> tuple[dict, list[tuple[str, Body]]]:
    out: dict = {}
    bodies: list[tuple[str, Body]] = []

    def add(key: str, prefix: str, body: Body, description: str) -> None:
        out[key] = {"prefix": prefix, "body": [body.snippet], "description": description}
        bodies.append((key, body))

    for d, doc in DIRECTIVES.items():
        body = Body().text(f"{d} ")
        if d == "workload":
            body.text('"').placeholder("workload.tvmscript").text('"')
        else:
            body.text('"').placeholder("llvm").text('"')
        add(f"directive {d}", d, body, doc)
    for inst in INSTRUCTIONS:
        key = f"{inst.section}:" if inst.section else inst.name
        add(key, inst.section or inst.name, instruction_body(inst), f"{inst.signature()}\n\n{inst.doc}")
    add(
        f"{EXPLAIN_SECTION}:",
        EXPLAIN_SECTION,
        Body().text(f"{EXPLAIN_SECTION}:"),
        "Start the explanation section: facts, rationales and effects that never change the trace.",
    )
    for kind in EXPLAIN_KINDS.values():
        body = Body().placeholder(f"{kind.name[0]}1").text(f' = {kind.name}("').placeholder("text").text('"')
        for key, kinds in kind.links.items():
            example = "b0" if kinds == ("instruction",) else f"{kinds[0][0]}1"
            body.text(f", {key}=[").placeholder(example).text("]")
        add(f"explain {kind.name}", kind.name, body.text(")"), kind.doc)
    return out, bodies


# ---- the highlighting test of every instruction --------------------------------------------


def instruction_test() -> str:
    lines = [
        f'# SYNTAX TEST "source.{SCOPE}" "every instruction of the table, as its snippet writes it"',
        f"# {HEADER}",
        "",
    ]
    for inst in INSTRUCTIONS:
        text = instruction_body(inst).expanded
        if inst.section:
            lines += [text, f"# <{'-' * len(inst.section)} keyword.control.section.{SCOPE}"]
            continue
        col = text.index(inst.name + "(")
        scope = "support.function.instruction.sample" if inst.decision else "support.function.instruction"
        marker = ("# <" + "-" * len(inst.name)) if col == 0 else ("#" + " " * (col - 1) + "^" * len(inst.name))
        lines += [text, marker + f" source.{SCOPE} meta.function-call.{SCOPE} {scope}.{SCOPE}"]
        for p in inst.params:
            if p.required and p.keyword:
                kcol = text.index(p.name + "=", col)
                lines.append("#" + " " * (kcol - 1) + "^" * len(p.name) + f" variable.parameter.{SCOPE}")
    return "\n".join(lines) + "\n"


# ---- output --------------------------------------------------------------------------------


def dump(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def outputs() -> dict[Path, str]:
    snips, _ = snippets()
    return {GRAMMAR: dump(grammar()), SNIPPETS: dump(snips), INSTRUCTION_TEST: instruction_test()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is stale")
    args = ap.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        data = text.encode("utf-8")
        if path.exists() and path.read_bytes() == data:
            continue
        stale.append(path.relative_to(ROOT))
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    for p in stale:
        print(("stale: " if args.check else "wrote: ") + str(p))
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())

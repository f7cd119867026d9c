"""Can the decoder write the training labels? Every label replayed through the decoding grammar.

Constrained decoding only offers what its grammar, its limits and TVM's replay allow
(`generate.Generator`). A training label outside that language is an answer the model can
never give, however well it learned it: it is forced off the label at the first refused
statement and the rest of its script derails. This walks each row's script statement by
statement through the same checks (`reachable`; no model needed) and reports, per
family, how many labels are reachable and the first statement refused in the others.

    python -m dragon_model.reachable ROWS --target cuda [--per-family 4] [--model DIR] [--json]

    python -m dragon_model.reachable data/corpus/llvm --target llvm --split test_family \
        --model model/weights/llvm --answers first_answer_llvm.json improvement_llvm.json

ROWS: training rows (a corpus folder or `dragon_model.records` output). `--answers`: the model's
answers from evaluations (`dragon_model.evaluate`'s JSON), judged in place of the labels of their
rows: would today's decoder still write what an earlier one wrote (its checks refuse nothing on
the way)? The grammar's constants (instructions, split factors and shapes, annotation values,
query repeats) are a trained model's (`--model`: its dragon_model.json) or, by default, those of
the rows' own training split: what a model trained on them would be given.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Reach:
    """Whether the decoder can write a script: how many statements it takes, and the first it refuses."""

    ok: bool
    statements: int  # statements accepted before the refusal (all of them when ok)
    total: int
    refused: str | None = None  # the first refused statement
    why: str | None = None


def reachable(gen, workload, target: Any, body: str, slower_body: str | None = None) -> Reach:
    """Whether decoding with generator GEN could write `body` for this workload, statement by statement, under
    the same grammar, limits and replay as `generate` (no model needed): a training label the
    decoder cannot reach is one the model can never answer, however well it learned it."""
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.data import prompt_text
    from dragon_model.generate import _remember, statements_of
    from dragon_model.prompts import plain_prompt
    from dragon_model.render import target_kind
    from dragon_model.replay_state import replay_prefix

    text = workload if isinstance(workload, str) and "\n" in workload else Path(workload).read_text(encoding="utf-8")
    mod = load_workload(text)
    kind = target_kind(target)
    prompt = plain_prompt(gen.tokenizer, prompt_text(text, target, slower_body))
    kept_len = len(gen.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    stmts = list(statements_of(body))
    if kept_len >= gen.max_positions - 16:
        return Reach(False, 0, len(stmts), None, "context: the prompt fills the model's positions")
    env, why = replay_prefix("", mod, kind)
    if env is None:
        raise ValueError(f"the workload cannot be scheduled: {why}")
    asked: Counter = Counter()
    done = ""
    for i, stmt in enumerate(stmts):
        refuse = lambda why: Reach(False, i, len(stmts), stmt.strip(), why)  # noqa: E731
        if i >= gen.max_statements:
            return refuse(f"max_statements: the decoder stops after {gen.max_statements} statements")
        ids = gen.tokenizer(stmt, add_special_tokens=False)["input_ids"]
        if len(ids) > gen.max_statement_tokens:
            return refuse(f"statement too long: {len(ids)} tokens, the decoder allows {gen.max_statement_tokens}")
        if kept_len + len(ids) >= gen.max_positions - 2:
            return refuse(f"max_tokens: the script passes the model's {gen.max_positions} positions")
        phases = gen.grammars(env, frozenset())
        matcher, in_head = gen.matcher(phases.head), True
        accepted = ""
        for tok in ids:
            if not matcher.accept_token(tok):
                return refuse(f"grammar: refused after {accepted!r}")
            accepted += gen.tokenizer.decode([tok], skip_special_tokens=False)
            if in_head and matcher.is_terminated() and accepted in phases.heads:
                matcher, in_head = gen.matcher(phases.rest(accepted)), False
        if not matcher.is_terminated():
            return refuse("grammar: the statement is incomplete")
        env, why = gen.judge(done, stmt, asked, mod, kind)
        if env is None:
            return refuse(why)
        _remember(asked, stmt)
        done += stmt
        kept_len += len(ids)
    return Reach(True, len(stmts), len(stmts))


def pick(rows: list, per_family: int, seed: int = 0) -> list:
    """Up to `per_family` rows of each (family, task), chosen at random with a fixed seed."""
    by: dict = defaultdict(list)
    for r in rows:
        by[(r.get("family", ""), r.get("task", "construction"))].append(r)
    rng = random.Random(seed)
    out = []
    for key in sorted(by):
        group = by[key]
        out += group if per_family <= 0 or len(group) <= per_family else rng.sample(group, per_family)
    return out


def judge_rows(rows: list, target: str, facts: dict, tokenizer=None) -> list[dict]:
    """One verdict per row: family, task, source, ok, statements, total, refused, why. A model that
    reads canonical names (FACTS' `canonical_names` "all") is judged on what it is trained on and
    asked: the workload, the label and the script an improvement starts from under canonical names
    (`as_canonical`)."""
    from dragon_model.data import _target, body_of_text, example
    from dragon_model.generate import DEFAULT_MAX_STATEMENTS, Generator
    from dragon_model.tokenizer import EOS, build_tokenizer

    tokenizer = tokenizer or build_tokenizer(compact=True)
    longest = facts.get("longest_script") or 0
    gen = Generator.without_model(
        tokenizer,
        allowed=facts.get("instructions"),
        literals=facts.get("literals"),
        max_statements=max(DEFAULT_MAX_STATEMENTS, int(1.25 * longest) + 1),
    )
    out = []
    for r in rows:
        if "answer" in r:  # an evaluation's answer in place of the label (`with_answers`)
            body = r["answer"]
        else:
            ex = example(r)
            body = ex["completion"][: -len(EOS)] if ex["completion"].endswith(EOS) else ex["completion"]
        slower = body_of_text(r["prompt_script"]) if r.get("task") == "improvement" and r.get("prompt_script") else None
        try:
            workload = r["workload_text"]
            if facts.get("canonical_names") == "all":
                workload, body, slower = as_canonical(r, _target(r) or target, body, slower)
            reach = reachable(gen, workload, _target(r) or target, body, slower)
            verdict = {
                "ok": reach.ok,
                "statements": reach.statements,
                "total": reach.total,
                "refused": reach.refused,
                "why": reach.why,
            }
        except Exception as e:
            verdict = {"ok": False, "statements": 0, "total": 0, "refused": None, "why": f"error: {e}"}
        out.append(
            {
                "id": r.get("id", ""),
                "family": r.get("family", ""),
                "task": r.get("task", "construction"),
                "source": r.get("source", ""),
                **verdict,
            }
        )
    return out


def as_canonical(row: dict, target, body: str, slower: str | None) -> tuple:
    """(workload, BODY, SLOWER) of ROW as a model trained under canonical names reads and writes them
    (`renaming.canonical_row_example`): every name the author chose replaced, the scripts' block
    names with them and their lambdas' parameters named by position. An evaluation's answer is
    already positional (the model wrote it so): renaming its blocks changes nothing else."""
    from dragon_model.renaming import canonical_workload, positional_lambdas, renamed_strings

    text, _, mapping = canonical_workload(row["workload_text"], target, scope="all")
    body = renamed_strings(body, mapping)
    body = body if "answer" in row else positional_lambdas(body)
    slower = positional_lambdas(renamed_strings(slower, mapping)) if slower else slower
    return text, body, slower


def with_answers(rows: list, files) -> list:
    """The rows with an answer in FILES (`dragon_model.evaluate`'s JSON: {"answers": [{"workload",
    "task", "script"}]}), each carrying that answer in place of its label. Rows no answer names are
    left out; an answer for no row, or a file or answer without its keys, is a ValueError naming the
    file (and the answer's position in it)."""
    by = {(r.get("workload"), r.get("task", "construction")): r for r in rows}
    out = []
    for f in files:
        try:
            data = json.loads(Path(f).read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:  # its line and column
            raise ValueError(f"{f}: {e}") from None
        if not isinstance(data, dict) or not isinstance(data.get("answers"), list):
            raise ValueError(f'{f}: not an answer file (no "answers" list)')
        for i, a in enumerate(data["answers"]):
            if not isinstance(a, dict) or not {"workload", "script"} <= a.keys():
                raise ValueError(f'{f}: answer {i + 1} has no "workload" and "script"')
            task = a.get("task", "construction")
            r = by.get((a["workload"], task))
            if r is None:
                raise ValueError(f"{f}: answer {i + 1}, for {a['workload']} ({task}), has no row")
            out.append({**r, "answer": a["script"]})
    return out


def reason(why: str | None) -> str:
    """A refusal's kind, for counting: the text before its first colon."""
    return (why or "").split(":", 1)[0]


def summary(verdicts: list[dict]) -> dict:
    by: dict = defaultdict(list)
    for v in verdicts:
        by[v["family"]].append(v)
    families = {}
    for fam, vs in sorted(by.items()):
        refused = Counter(
            f"{(v['refused'] or '').split('(')[0].split('= ')[-1]}: {reason(v['why'])}" for v in vs if not v["ok"]
        )
        families[fam] = {
            "rows": len(vs),
            "reachable": sum(v["ok"] for v in vs),
            "refused": dict(refused.most_common(3)),
        }
    n = len(verdicts)
    return {
        "rows": n,
        "reachable": sum(v["ok"] for v in verdicts),
        "families": families,
        "reasons": dict(Counter(reason(v["why"]) for v in verdicts if not v["ok"]).most_common()),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dragon_model.reachable", description=__doc__.split("\n\n")[0])
    p.add_argument("rows", help="training rows: a corpus folder, a rows folder or a .jsonl file")
    p.add_argument("--target", default="cuda", help="target kind of the rows to judge (cuda, llvm...)")
    p.add_argument("--model", help="a trained model folder: its grammar constants instead of the rows' own")
    p.add_argument("--per-family", type=int, default=4, help="rows judged per family and task (0: all)")
    p.add_argument("--split", default="train", help="the split whose rows are judged")
    p.add_argument("--families", help="only these families (comma-separated)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--answers",
        nargs="+",
        metavar="FILE",
        help="evaluations' answer files: their answers judged in place of their rows' labels",
    )
    p.add_argument(
        "--canonical-names",
        choices=["all"],
        help="judge as a model trained under canonical names (`train --canonical-names all`) reads them "
        "(a --model says so itself)",
    )
    p.add_argument("--json", action="store_true", help="print the verdicts and the summary as JSON")
    args = p.parse_args(argv)

    from dragon_model.data import grammar_facts, load_rows

    rows = load_rows(args.rows, target_kind=args.target)
    if not rows:
        print(f"{args.rows}: no rows for target {args.target}", file=sys.stderr)
        return 2
    if args.model:
        facts = json.loads((Path(args.model) / "dragon_model.json").read_text(encoding="utf-8"))
    else:
        facts = grammar_facts([r for r in rows if r.get("split") == "train"] or rows)
    if args.canonical_names:
        facts = dict(facts, canonical_names=args.canonical_names)
    families = set(args.families.split(",")) if args.families else None
    chosen = [r for r in rows if r.get("split") == args.split and (families is None or r.get("family") in families)]
    if args.answers:
        try:
            chosen = with_answers(chosen, args.answers)
        except (OSError, ValueError) as e:
            print(f"--answers: {e}", file=sys.stderr)
            return 2
    else:
        chosen = pick(chosen, args.per_family, args.seed)
    verdicts = judge_rows(chosen, args.target, facts)
    result = summary(verdicts)
    if args.json:
        print(json.dumps({"summary": result, "verdicts": verdicts}, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    what = "answers" if args.answers else "labels"
    table = Table(title=f"{what} the decoder can write: {result['reachable']} of {result['rows']}")
    for col in ("family", "reachable", "first refused statement (count)"):
        table.add_column(col)
    for fam, f in result["families"].items():
        table.add_row(fam, f"{f['reachable']}/{f['rows']}", "; ".join(f"{k} ({c})" for k, c in f["refused"].items()))
    Console().print(table)
    for v in verdicts:
        if not v["ok"]:
            print(f"{v['id']}: statement {v['statements'] + 1} of {v['total']}: {v['refused']!r}: {v['why']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Corpus rows -> training examples (prompt, completion), and the prompt layout.

A corpus (written by `dragon_dsl/corpus/build.py`, or `toy_corpus.py` here) is a folder
of JSON Lines or Parquet files (or a saved `datasets` dataset) whose rows carry:
`id, task, split, family, workload, workload_hash, params, target, workload_text,
prompt_script, prompt_latency_us, script, trace, latency_us, unscheduled_us, dlight_us`.

Prompt layout (token level; `tokenizer.py` defines the special tokens):

    <s> <workload> RENDERED WORKLOAD [<improve> SLOWER SCRIPT BODY] <script> SCRIPT BODY </s>

A script body is the canonical form of the trace without header or explanation
graph (`from_trace_json(trace)`): the model writes only the formal part; the header
comes from the request and the explanation from `dragon_dsl.explain`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from dragon_model.tokenizer import BOS, EOS, IMPROVE, SCRIPT, WORKLOAD

SPLITS = ("train", "valid", "test_family", "test_shape")
TASKS = ("construction", "improvement")


def load_rows(
    corpus, splits: Iterable[str] | None = None, target_kind: str | None = None, tasks: Iterable[str] | None = None
) -> list[dict]:
    """All rows of a corpus folder (jsonl, jsonl.xz / parquet / saved dataset) or file, filtered by split,
    target kind, task. A line that is not JSON is a ValueError naming its file, line and column."""
    path = Path(corpus)
    rows: list[dict] = []
    if (path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists():
        import datasets

        ds = datasets.load_from_disk(str(path))
        parts = ds.values() if isinstance(ds, datasets.DatasetDict) else [ds]
        for part in parts:
            rows.extend(dict(r) for r in part)
    else:
        files = (
            sorted(path.rglob("*.jsonl")) + sorted(path.rglob("*.jsonl.xz")) + sorted(path.rglob("*.parquet"))
            if path.is_dir()
            else [path]
        )
        for f in files:
            if f.name == "manifest.jsonl":
                continue
            if f.suffix == ".parquet":  # through pyarrow: datasets' reader fails on a file of 0 rows
                import pyarrow.parquet as pq

                rows.extend(pq.read_table(str(f)).to_pylist())
            else:  # JSON Lines, or JSON Lines compressed with xz (a committed training set: 85x smaller)
                from dragon_dsl.language.files import read_json_lines

                rows.extend(read_json_lines(f))
    from dragon_model.render import target_kind as kind_of

    keep = []
    for r in rows:
        if "script" not in r or "trace" not in r:
            continue
        if splits is not None and r.get("split") not in set(splits):
            continue
        if tasks is not None and r.get("task") not in set(tasks):
            continue
        if target_kind is not None and kind_of(_target(r)) != target_kind:
            continue
        keep.append(r)
    return keep


def _target(row: dict):
    t = row.get("target")
    if isinstance(t, str) and t.strip().startswith(("{", '"')):
        return json.loads(t)
    return t


def row_target(row: dict):
    return _target(row)


def script_body(trace) -> str:
    """The canonical script of a trace, without header and explanation graph."""
    from dragon_dsl import from_trace_json

    if isinstance(trace, str):
        trace = json.loads(trace)
    return from_trace_json(trace)


@lru_cache(maxsize=8192)  # pure; train walks the same scripts for its instructions, literals and longest script
def body_of_text(text: str) -> str:
    """The formal part of a script text (header, comments and explanation graph dropped), canonical."""
    from dragon_dsl import to_trace_json

    return script_body(to_trace_json(text))


def without_unused_queries(body: str) -> str:
    """BODY without the pure instructions (queries, samples) whose results nothing uses
    (`dragon-check` DRG104), names renumbered as the canonical form derives them: the schedule is the
    same. dlight's scripts are 16% such queries (4-5% of MetaSchedule's samples); a model that
    copies them loses count of its names (`b77 = get_producers(b38)` where dlight queries b76, and
    the next inline takes the wrong block)."""
    from dragon_dsl import check_text, to_trace_json

    while True:
        unused = {d.span.line for d in check_text(body)[1] if d.code == "DRG104"}
        if not unused:
            return body
        kept = "".join(line for i, line in enumerate(body.splitlines(keepends=True), 1) if i not in unused)
        body = script_body(to_trace_json(kept))


#: the instruction a statement calls (at the start of a line, after its results)
CALL = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*(?:, [A-Za-z_][A-Za-z0-9_]*)* = )?([a-z_][a-z0-9_]*)\(", re.M)


def _bodies(rows: Iterable[dict]):
    """The bodies of the scripts of these rows, answers and prompts."""
    for r in rows:
        for text in (r.get("script"), r.get("prompt_script")):
            if text:
                yield body_of_text(text)


def instructions_of(rows: Iterable[dict]) -> list[str]:
    """The instruction names the scripts of these rows use (and their prompt scripts): what a
    model trained on them has seen, and so what its grammar offers (`grammar.statement_grammar`)."""
    return sorted({name for body in _bodies(rows) for name in CALL.findall(body)})


def literals_of(rows: Iterable[dict]) -> dict:
    """The constants the scripts of these rows write where MetaSchedule writes constants, for the
    decoding grammar (`decoder_grammar`): `sample_categorical`'s candidate lists, the integer
    factors of constant splits, and per annotation key its integer, string and list values (and
    "sampled" where it takes a sample_categorical's value). A model
    trained on these rows has seen nothing else there; an untrained guess (a split of 2222 x 2222,
    a categorical of [0, 164, 512510]) builds a kernel that runs for minutes."""
    return _merged_literals(_script_literals(body) for body in dict.fromkeys(_bodies(rows)))


def longest_script(rows: Iterable[dict]) -> int:
    """The most statements of any script (answer or prompt) of these rows: a trained model's
    generator allows a margin over it (`Generator.from_path`)."""
    return max((len(CALL.findall(body)) for body in _bodies(rows)), default=0)


PARALLEL_FROM = 256  # distinct scripts from which grammar_facts starts processes


def spawned_map(fn, items: list, jobs: int = 0, parallel_from: int = PARALLEL_FROM) -> list:
    """[FN(x) for x in ITEMS], over JOBS processes (0: one per core) once there are PARALLEL_FROM
    items or more. The processes are spawned: the caller may hold a GPU context, which forked
    children must not inherit."""
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(items) < parallel_from:
        return [fn(x) for x in items]
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(fn, items, chunksize=max(1, len(items) // (8 * jobs))))


def grammar_facts(rows: Iterable[dict], jobs: int = 0) -> dict:
    """`instructions_of`, `literals_of` and `longest_script` of these rows in one pass: each
    distinct script text is parsed and checked once, over JOBS processes (0: one per core). For
    13k CUDA rows the three walked separately took minutes of a training call."""
    texts = list(dict.fromkeys(t for r in rows for t in (r.get("script"), r.get("prompt_script")) if t))
    facts = spawned_map(_script_facts, texts, jobs, PARALLEL_FROM)
    return {
        "instructions": sorted({name for names, _n, _lit in facts for name in names}),
        "literals": _merged_literals(lit for _names, _n, lit in facts),
        "longest_script": max((n for _names, n, _lit in facts), default=0),
    }


def _script_facts(text: str) -> tuple:
    """(instruction names, statements, literals) of one script text."""
    body = body_of_text(text)
    calls = CALL.findall(body)
    return sorted(set(calls)), len(calls), _script_literals(body)


def split_shape(factors: list) -> str | None:
    """The shape of a constant split's factors, `None` where it is inferred and `k` for an integer or
    a categorical's value ("None,k,k,k" for dlight's [None, 1, 16, 4], "None,k" for [None, v4]);
    None for a split by a sampled tile (its own values, not a shape)."""
    if not factors or None not in factors and not any(type(f) is int for f in factors):
        return None
    return ",".join("None" if f is None else "k" for f in factors)


def _script_literals(body: str) -> tuple:
    """(categorical lists, split factors, [(annotation key, kind, value)], constant split shapes,
    most repeats in a row of one query) one script writes."""
    from collections import Counter

    from dragon_dsl import check_text
    from dragon_dsl.language.table import INST
    from dragon_dsl.language.values import Ref
    from dragon_model.generate import _remember, statements_of

    cats, factors, ann, shapes = set(), set(), set(), set()
    asked: Counter = Counter()
    repeats = 1
    for stmt in statements_of(body):  # one query asked again with only queries between (the decoder's count)
        _remember(asked, stmt)
        repeats = max(repeats, max(asked.values(), default=1))
    program, _ = check_text(body)
    for bi in program.instructions:
        entry, args = bi.entry, bi.args
        if entry is INST.sample_categorical and isinstance(args.get("candidates"), list):
            cats.add(tuple(args["candidates"]))
        elif entry is INST.split and isinstance(args.get("factors"), list):
            factors |= {f for f in args["factors"] if type(f) is int}
            shape = split_shape(args["factors"])
            if shape:
                shapes.add(shape)
        elif entry is INST.annotate and isinstance(args.get("key"), str):
            value = args.get("value")
            kind = (
                "sampled"
                if isinstance(value, Ref)
                else "list"
                if isinstance(value, list)
                else "str"
                if isinstance(value, str)
                else "int"
                if type(value) is int
                else None
            )
            if kind:  # a sampled value is recorded by the kind of its name (a categorical's value)
                ann.add(
                    (
                        args["key"],
                        kind,
                        value.kind if kind == "sampled" else json.dumps(value) if kind == "list" else value,
                    )
                )
    return cats, factors, ann, shapes, repeats


def _merged_literals(parts: Iterable[tuple]) -> dict:
    cats, factors, ann, shapes, repeats = set(), set(), {}, set(), 1
    for c, f, a, sh, rep in parts:
        cats |= c
        factors |= f
        shapes |= sh
        repeats = max(repeats, rep)
        for key, kind, value in a:
            ann.setdefault(key, {}).setdefault(kind, set()).add(value)
    return {
        "categorical": [list(c) for c in sorted(cats)],
        "split_factors": sorted(factors),
        "split_shapes": sorted(shapes, key=lambda sh: (sh.count(","), sh)),
        "query_repeats": repeats,
        "annotations": {
            key: {kind: sorted(vals) for kind, vals in sorted(kinds.items())} for key, kinds in sorted(ann.items())
        },
    }


def merged_facts(base: dict, facts: dict) -> dict:
    """The grammar facts (`grammar_facts`) of a model fine-tuned from BASE (its dragon_model.json)
    on rows whose own facts are FACTS: their union. The base learnt to write what its rows wrote,
    and fine-tuning on fewer rows does not unlearn it: a fine-tune on 2,210 rows computed 109 split
    factors where its base offered 388, which would narrow the grammar the model decodes under."""
    if not base.get("literals"):
        return facts
    return {
        **facts,
        "instructions": sorted(set(base.get("instructions", [])) | set(facts["instructions"])),
        "literals": _merged_literals(_literal_parts(lit) for lit in (base["literals"], facts["literals"])),
        "longest_script": max(base.get("longest_script", 0), facts["longest_script"]),
    }


def _literal_parts(literals: dict) -> tuple:
    """A recorded `literals` dict as one part of `_merged_literals` (a script's `_script_literals`)."""
    return (
        {tuple(c) for c in literals.get("categorical", [])},
        set(literals.get("split_factors", [])),
        [
            (key, kind, value)
            for key, kinds in literals.get("annotations", {}).items()
            for kind, values in kinds.items()
            for value in values
        ],
        set(literals.get("split_shapes", [])),
        literals.get("query_repeats", 1),
    )


@lru_cache(maxsize=4096)
def _render(workload_text: str, kind: str) -> str:
    from dragon_model.render import render_workload

    return render_workload(workload_text, kind)


def prompt_text(workload, target, slower_body: str | None = None) -> str:
    """The prompt string (special tokens included) for a workload, a target and an optional script to improve."""
    from dragon_model.render import target_kind

    text = workload if isinstance(workload, str) and "\n" in workload else Path(workload).read_text(encoding="utf-8")
    out = BOS + WORKLOAD + _render(text, target_kind(target))
    if slower_body is not None:
        out += IMPROVE + slower_body
    return out + SCRIPT


#: how much slower than the unscheduled program a CPU schedule may time and still count as no slower:
#: two timings of one kernel differ by a few percent
TIMING_NOISE = 1.05


def slower_than_written(row: dict) -> bool:
    """Whether a measured corpus row's answer times slower than its workload's unscheduled program
    (beyond TIMING_NOISE): 154 of the 666 training rows of the llvm corpus (the best of 8
    MetaSchedule trials; pool2d 51 of them) are, up to 90,000x slower (a permute), and a model taught
    them writes such scripts. Such rows are left out of training (`examples`), not taught as no
    schedule: the shipped llvm model fine-tuned with an empty answer for them answered every one of
    the 59 held-out construction prompts with no schedule (the end of script is one token, the first
    statement many). GPU rows have no unscheduled time (the program as written does not build there)."""
    lat, plain = row.get("latency_us"), row.get("unscheduled_us")
    try:
        return bool(lat and plain) and float(lat) > float(plain) * TIMING_NOISE
    except (TypeError, ValueError):
        return False


def example(row: dict) -> dict:
    """One (prompt, completion) pair of a corpus row."""
    if "prompt" in row and "completion" in row:  # rendered already (dragon_model.records)
        return {
            "prompt": row["prompt"],
            "completion": row["completion"],
            "task": row.get("task", "construction"),
            "family": row.get("family", ""),
            "id": row.get("id", ""),
        }
    slower = None
    if row.get("task") == "improvement" and row.get("prompt_script"):
        slower = body_of_text(row["prompt_script"])
    return {
        "prompt": prompt_text(row["workload_text"], _target(row), slower),
        "completion": script_body(row["trace"]) + EOS,
        "task": row.get("task", "construction"),
        "family": row.get("family", ""),
        "id": row.get("id", ""),
    }


def examples(rows: Iterable[dict]) -> list[dict]:
    """The (prompt, completion) pairs of ROWS, those whose answer is slower than the program as
    written left out (`slower_than_written`)."""
    return [example(r) for r in rows if not slower_than_written(r)]

"""Names in training rows, examples and prompts: renamed at random (to test and train a model on
names it has never seen) and canonical (so that a model reads the program, not the names its
author chose). The token-level renaming of a workload lives in `names.py`; this module applies
names to rows, prompts and scripts.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable

from dragon_model.data import TASKS, example, prompt_text, row_target
from dragon_model.tokenizer import IMPROVE, SCRIPT


def random_names(names: Iterable[str], rng, avoid: Iterable[str] = ()) -> dict:
    """A new name for each of NAMES, drawn from RNG: 1-3 lowercase letters and a digit, none of them
    one of NAMES or AVOID or drawn before. Ending in a digit, a new name is never a word of the
    rendered prompt (`block`, `iters`, `root`, ...)."""
    import string

    names = list(names)
    taken, mapping = set(names) | set(avoid), {}
    for old in names:
        while True:
            new = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 3))) + str(rng.randint(0, 9))
            if new not in taken:
                taken.add(new)
                mapping[old] = new
                break
    return mapping


def intermediate_names(text: str) -> list:
    """The blocks (root aside) and allocated buffers of a TVMScript workload."""
    names = [n for n in re.findall(r'T\.sblock\("([^"]+)"\)', text) if n != "root"]
    names += [n for n in re.findall(r"^\s*(\w+) = T\.sblock_alloc_buffer", text, flags=re.M) if n not in names]
    return names


def renamed_words(text: str, mapping: dict) -> str:
    """TEXT (a workload's TVMScript, or a script naming its blocks) with each word of MAPPING replaced
    by its new name, also where a suffix follows it (a schedule's `sumsq_rf` becomes `k8_rf`, as
    `renamed_example` renames)."""
    if not mapping:
        return text
    pattern = re.compile(
        r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, sorted(mapping, key=len, reverse=True))) + r")(?![A-Za-z0-9])"
    )
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def renamed_row(row: dict, rng) -> dict:
    """A corpus row whose workload's blocks and allocated buffers are renamed at random
    (`random_names`), the same way in its workload, its script and the script an improvement starts
    from: the same program and schedules under other names, to evaluate a model on names it has
    never seen."""
    texts = [row["workload_text"]] + [row[k] for k in ("script", "prompt_script") if row.get(k)]
    words = {w for t in texts for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", t)}  # a loop's `i0` stays its own
    mapping = random_names(intermediate_names(row["workload_text"]), rng, avoid=words)
    out = dict(row, workload_text=renamed_words(row["workload_text"], mapping))
    for key in ("script", "prompt_script"):
        if row.get(key):
            out[key] = renamed_words(row[key], mapping)
    return out


def renamed_example(ex: dict, rng) -> dict | None:
    """EX (a prompt and completion, `example`) with every block of its workload but the root, and
    every buffer it allocates, renamed at random, the same way in prompt and completion (None where
    it names none). Names derived from one keep their suffix (`mean_rf` becomes `k8_rf`); a block
    and the buffer it writes often share a name, and so share the new one. The program is the same:
    only what the model could take as a cue for a schedule without reading the program changes."""
    head = ex["prompt"].split(SCRIPT)[0]
    names = [n for n in re.findall(r"^block (\S+) iters", head, flags=re.M) if n != "root"]
    names += [n for n in re.findall(r"^buffer (\S+) \S+ alloc$", head, flags=re.M) if n not in names and n != "root"]
    if not names:
        return None
    mapping = random_names(names, rng)
    return dict(ex, prompt=renamed_words(ex["prompt"], mapping), completion=renamed_words(ex["completion"], mapping))


def canonical_mapping(prompt: str, scope=True) -> dict:
    """The canonical names of a rendered prompt's blocks (the root aside) and allocated buffers, in
    the order the prompt lists them: `q0`, `q1`, ... (skipping any that is already a word of the
    prompt). A model trained on canonical names (`train --canonical-names`) reads the program, not
    names a user or an operator library chose: the same program under other names gets the same
    prompt (`Generator` renames the workload before decoding and its answer back after).
    SCOPE "all" names the parameter buffers too (after the blocks and allocated buffers): then no
    name the workload's author chose is left in the prompt (iteration variables are positional)."""
    head = prompt.split(SCRIPT)[0]
    names = [n for n in re.findall(r"^block (\S+) iters", head, flags=re.M) if n != "root"]
    names += [n for n in re.findall(r"^buffer (\S+) \S+ alloc$", head, flags=re.M) if n not in names and n != "root"]
    if scope == "all":
        names += [n for n in re.findall(r"^buffer (\S+) \S+ param$", head, flags=re.M) if n not in names]
        words = set()  # every name is replaced: none can collide with what it replaces
    else:
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", prompt))
    fresh = (f"q{i}" for i in itertools.count() if f"q{i}" not in words)
    return {n: next(fresh) for n in names}


def canonical_workload(text: str, target, slower_body: str | None = None, scope=True) -> tuple:
    """(workload TEXT, SLOWER_BODY, mapping) under the canonical names of their prompt
    (`canonical_mapping`): what a model trained on canonical names reads (`Generator`, RL's prompts).
    The names as written, and no mapping, where the renamed program would not load (a block named
    like a word of TVMScript itself). With SCOPE "all" every name the author chose is replaced
    (`names.canonical`: buffers, blocks, loop and iteration variables, each role numbered on its
    own, from TVM's printing of the program) and the mapping holds the names a script can use:
    the blocks, and the buffers whose names schedules give the blocks they add (`renamed_strings`);
    the slower script is renamed inside its string literals alone."""
    from dragon_dsl.tvm.workload import load_workload, workload_text

    if scope == "all":
        from dragon_model.names import canonical

        renamed_text, mapping = canonical(workload_text(load_workload(text)))
        slower = positional_lambdas(renamed_strings(slower_body, mapping)) if slower_body else slower_body
    else:
        mapping = canonical_mapping(prompt_text(text, target, slower_body), scope)
        renamed_text = renamed_words(text, mapping)
        slower = renamed_words(slower_body, mapping) if slower_body else slower_body
    try:
        load_workload(renamed_text)
    except Exception:
        return text, slower_body, {}
    return renamed_text, slower, mapping


_LAMBDA = re.compile(r"\blambda\b")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def positional_lambdas(script: str) -> str:
    """SCRIPT with the parameters of every lambda (index map) named by position: `i0, i1, ...`
    untyped, `(iters_0: int64, ...)` typed, as the decoder's grammar offers them (`decoder_settings.
    block_layouts`); a lambda named by position already (`(i0: int64, ...)`: dlight's GEMM layouts,
    which the decoder offers in that spelling) stays as it is. A lambda's parameters are bound: TVM compares maps by position, so the
    script means what it meant. dlight names them after the workload's iteration variables
    (`lambda v_i, v_k: (v_i, v_k)`), names a model reading canonical names never sees in its
    prompt: without this, its training labels named what its prompts no longer showed."""
    out, pos = [], 0
    for m in _LAMBDA.finditer(script):
        if m.start() < pos:  # inside a lambda already rewritten (none nests, but be safe)
            continue
        rewritten = _positional_lambda(script, m.end())
        if rewritten is None:
            continue
        text, end = rewritten
        out.append(script[pos : m.start()] + text)
        pos = end
    return "".join(out) + script[pos:]


def _positional_lambda(script: str, at: int):
    """(the lambda starting at keyword end AT rewritten, where it ends) or None where it does not
    read as a lambda with parameters."""
    i = at
    while i < len(script) and script[i] == " ":
        i += 1
    typed = script.startswith("(", i)
    if typed:
        close = script.find(")", i)
        if close < 0 or not script.startswith(":", close + 1):
            return None
        parts = [p.split(":") for p in script[i + 1 : close].split(",")]
        params = [p[0].strip() for p in parts]
        dtypes = [p[1].strip() if len(p) > 1 else None for p in parts]
        body_at = close + 2
    else:
        colon = script.find(":", i)
        if colon < 0:
            return None
        params = [p.strip() for p in script[i:colon].split(",")]
        body_at = colon + 1
    if not params or not all(_IDENT.fullmatch(p) for p in params):
        return None
    depth, j = 0, body_at
    while j < len(script) and script[j] != "\n":
        ch = script[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            break
        j += 1
    if params in ([f"i{k}" for k in range(len(params))], [f"iters_{k}" for k in range(len(params))]):
        return script[at - len("lambda") : j], j  # positional already (dlight's GEMM maps, MetaSchedule's)
    names = {p: (f"iters_{k}" if typed else f"i{k}") for k, p in enumerate(params)}
    if typed:
        head = "(" + ", ".join(f"{names[p]}: {d}" if d else names[p] for p, d in zip(params, dtypes)) + ")"
    else:
        head = ", ".join(names[p] for p in params)
    words = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, params)) + r")(?![A-Za-z0-9_])")
    body = words.sub(lambda w: names[w.group(1)], script[body_at:j])
    return f"lambda {head}:{body}", j


_GET_SBLOCK = re.compile(r'(get_sblock\(\s*)"([^"\\]*)"')


def renamed_strings(script: str, mapping: dict) -> str:
    """SCRIPT with MAPPING's names replaced inside its string literals alone (`get_sblock("C")`),
    where a script names blocks; its own result names (`b0`, `l1`) are never touched. A canonical
    MAPPING (`names.NameMap`) also holds buffers: those rename only the block a `get_sblock` names
    (`A_reindex_shared` is a block named after buffer A), never another literal (a buffer `x` would
    otherwise turn `threadIdx.x` into `threadIdx.p0`). A plain dict holds blocks alone."""
    blocks = getattr(mapping, "blocks", mapping)
    buffers = getattr(mapping, "buffers", {})
    pieces = _GET_SBLOCK.split(script)  # [text, `get_sblock(`, its name, text, ...]
    res = []
    for i in range(0, len(pieces), 3):
        res.append(re.sub(r'"([^"\\]*)"', lambda m: '"' + renamed_words(m.group(1), blocks) + '"', pieces[i]))
        if i + 2 < len(pieces):
            res.append(pieces[i + 1] + '"' + _block_name(pieces[i + 2], blocks, buffers, mapping) + '"')
    return "".join(res)


#: what the schedule primitives that name a block after a block append (rfactor, decompose_reduction,
#: blockize); those that name it after a buffer (cache_read/write, reindex, pad) append a scope or
#: `_reindex`, `_pad`
_BLOCK_SUFFIX = re.compile(r"_(rf|init|o|update)(?![A-Za-z0-9])")


def _block_name(name: str, blocks: dict, buffers: dict, both: dict) -> str:
    """A get_sblock NAME renamed: a block's name, or one made from a block's (`C_rf`) or a buffer's
    (`C_reindex_shared`) name; where a block and a buffer share the name it starts with, the suffix
    tells which (`_BLOCK_SUFFIX`). BOTH: the blocks and buffers in one mapping, a block's name first."""
    if not both:
        return name
    m = re.match(r"(" + "|".join(map(re.escape, sorted(both, key=len, reverse=True))) + r")(?![A-Za-z0-9])", name)
    if not m:
        return renamed_words(name, both)
    head, rest = m.group(1), name[m.end() :]
    use_block = head in blocks and (not rest or head not in buffers or _BLOCK_SUFFIX.match(rest))
    new = blocks[head] if use_block else buffers[head]
    return new + renamed_words(rest, both)


def canonical_example(ex: dict) -> dict:
    """EX (a prompt and completion, `example`) under the canonical names of its prompt
    (`canonical_mapping`), the same way in prompt and completion."""
    mapping = canonical_mapping(ex["prompt"])
    return dict(ex, prompt=renamed_words(ex["prompt"], mapping), completion=renamed_words(ex["completion"], mapping))


def canonical_row_example(row: dict) -> dict:
    """The (prompt, completion) pair of ROW (`example`) with every name its workload's author chose
    replaced (`canonical_workload(..., scope="all")`): the prompt rendered from the renamed workload,
    the block names of the completion and of the script an improvement starts from renamed with it,
    and the lambdas of both named by position (`positional_lambdas`). A row written by
    `canonical_rows` is that pair already."""
    ex = example(row)
    if row.get("names") == CANONICAL:
        return ex
    target = row_target(row)
    text, _, mapping = canonical_workload(row["workload_text"], target, scope="all")
    slower = None
    if IMPROVE in ex["prompt"]:
        slower = renamed_strings(ex["prompt"].split(IMPROVE, 1)[1].rsplit(SCRIPT, 1)[0], mapping)
        slower = positional_lambdas(slower)
    completion = positional_lambdas(renamed_strings(ex["completion"], mapping))
    return dict(ex, prompt=prompt_text(text, target, slower), completion=completion)


def canonical_template(template: tuple, mapping) -> tuple:
    """A tensor-core TEMPLATE (statements, decisions: `candidates.tensor_core_template`) under the
    canonical names of MAPPING, as a canonical model's training labels are written (block names
    renamed, lambdas named by position); the decisions name nothing and stay."""
    statements, decisions = template
    return [positional_lambdas(renamed_strings(st, mapping)) for st in statements], decisions


PARALLEL_FROM = 512  # rows from which canonical_row_examples starts processes

#: a row's "names" when its prompt and completion are canonical already (`canonical_rows`)
CANONICAL = "all"


def canonical_row_examples(rows: Iterable[dict], jobs: int = 0) -> list[dict]:
    """`canonical_row_example` of every row, over JOBS processes (0: one per core) where there are
    many: TVM parses and prints each workload twice (about 75 ms a row, 20 minutes for 16k rows on
    one core)."""
    from dragon_model.data import spawned_map

    rows = list(rows)  # rows renamed already (`canonical_rows`) are taken as they are, without processes
    todo = [r for r in rows if r.get("names") != CANONICAL]
    renamed = iter(spawned_map(canonical_row_example, todo, jobs, PARALLEL_FROM))
    return [example(r) if r.get("names") == CANONICAL else next(renamed) for r in rows]


def canonical_rows(rows: Iterable[dict], jobs: int = 0) -> list[dict]:
    """ROWS, each with its canonical prompt and completion (`canonical_row_example`) written in and
    marked `"names": "all"`; its other fields (split, script, latencies) kept. Training under
    `--canonical-names all` takes such rows as they are, so a machine without TVM can train on
    rows renamed elsewhere (TVM parses each workload twice: minutes for a fine-tuning set)."""
    rows = list(rows)
    pairs = canonical_row_examples(rows, jobs)
    return [
        dict(row, prompt=ex["prompt"], completion=ex["completion"], names=CANONICAL) for row, ex in zip(rows, pairs)
    ]


def with_renamed_copies(rows: Iterable[dict], seed: int = 2026, tasks: Iterable[str] = ("construction",)) -> list[dict]:
    """ROWS, each row of one of TASKS followed by a copy whose blocks and allocated buffers are renamed
    at random (`renamed_example`; rows whose workload names none get no copy). SEED decides the names:
    training one epoch at a time with another seed each shows the model new names every epoch. The
    shipped-size llvm model chose its schedule by a block's name: for a held-out RMSNorm it tiled the output block
    where its reduction was called `sumsq`, and wrote the layer norms' `rfactor` where that block
    was renamed `mean`. A copy keeps the row's other fields
    (its latencies: `examples` leaves out a slow row's copy with it)."""
    import random

    rng, tasks = random.Random(seed), set(tasks)
    unknown = tasks - set(TASKS)
    if unknown:
        raise ValueError(f"renamed copies: unknown task {sorted(unknown)[0]!r} ({', '.join(TASKS)})")
    out = []
    for row in rows:
        out.append(row)
        if row.get("task", "construction") in tasks:
            copy = renamed_example(example(row), rng)
            if copy is not None:
                out.append(
                    dict(row, prompt=copy["prompt"], completion=copy["completion"], id=f"{row.get('id', '')}:renamed")
                )
    return out


def main(argv=None) -> int:
    """`python -m dragon_model.renaming ROWS -o OUT.jsonl.xz`: the training rows of ROWS (a corpus
    folder or file, `data.load_rows`) under canonical names (`canonical_rows`)."""
    import argparse
    from pathlib import Path

    from dragon_dsl.language.files import write_bytes
    from dragon_model.data import load_rows

    ap = argparse.ArgumentParser(prog="python -m dragon_model.renaming", description=main.__doc__.split("\n\n")[0])
    ap.add_argument("rows", help="a corpus folder or rows file")
    ap.add_argument("-o", "--out", required=True, help="the rows file to write (.jsonl or .jsonl.xz)")
    ap.add_argument("--jobs", type=int, default=0, help="processes (default: one per core)")
    args = ap.parse_args(argv)
    rows = load_rows(args.rows)
    if not rows:
        ap.error(f"{args.rows}: no training rows")
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in canonical_rows(rows, args.jobs)).encode()
    if args.out.endswith(".xz"):
        import lzma

        text = lzma.compress(text, preset=6)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_bytes(args.out, text)
    print(f"{len(rows)} rows under canonical names: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

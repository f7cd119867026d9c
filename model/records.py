"""Training rows from the pretraining records (`dragon corpus pretrain`) and the measured corpus.

    python -m dragon_model.records PRE_DIR... --out ROWS [--corpus data/corpus/cuda] [--jobs N]
                                   [--measured RESULTS.jsonl] [--label-repeat N] [--plain-labels] [--sft-only]
                                   [--measured-only] [--exclude-families A,B]
    python -m dragon_model.records PRE_DIR... --batch BATCH.jsonl     # what `dragon measure` labels
                                   [--max-flops F] [--min-flops F] [--max-bytes B] [--require-space S] [--per-space N]
                                   [--families A,B]
                                   [--measured RESULTS.jsonl]  # (its candidates left out)

Writes two row sets, each a folder `dragon train sft` reads (JSON Lines, `split` train/valid):

* `ROWS/pretrain/`: every sampled script of every record (and dlight's), one construction row
  each: validity, learned without a measurement. On GPU targets a sample that is slow before it
  runs (a kernel launched from a host loop, or one that leaves the GPU idle) is left out
  (`--keep-slow` keeps it).
* `ROWS/sft/`: one label per workload: the fastest known schedule. With `--measured` (the results
  of `dragon measure` on `--batch`'s file: every record's scripts and dlight's, verified and timed
  on the GPU; on a CPU, the program as written instead of dlight's), that is the fastest verified
  script of the record, the baseline included (on a CPU, no row when nothing beats the program as
  written: a model taught empty answers gives them everywhere). For a
  workload of the measured corpus it is the corpus' answer unless dlight's measured latency was
  lower (then dlight's script); for a workload nobody measured, dlight's script (the baseline a
  GPU answer must reach; `--measured-only` leaves such workloads out, so that fine-tuning sees only
  measured labels). Improvement rows pair scripts of the workload with that label, so the
  model learns to rewrite a script into the label: measured ones first, slowest first (a ranking
  the label wins), then unmeasured samples.

Rows carry the prompt and the completion already rendered (`prompt`, `completion`): rendering a
workload needs TVM (tens of milliseconds each), so it is done here, in parallel, once.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterable
from pathlib import Path

from dragon_model.held_out import TASKS_FILE, train_only
from dragon_model.label_batch import (  # noqa: F401  (importable here as before the split)
    BASELINES,
    candidate_id,
    label_candidates,
    measured_label,
    read_measured,
    record_scripts,
    write_batch,
)
from dragon_model.tokenizer import EOS

VALID_PERCENT = 3


def _split(name: str) -> str:
    import hashlib

    return "valid" if int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % 100 < VALID_PERCENT else "train"


def _row(name: str, family: str, target, workload_text: str, task: str, body: str, prompt: str, **extra) -> dict:
    return {
        "id": f"{name}:{task}:{extra.pop('n', 0)}",
        "task": task,
        "split": _split(name),
        "family": family,
        "workload": name,
        "target": target if isinstance(target, str) else json.dumps(target),
        "workload_text": workload_text,
        "prompt": prompt,
        "completion": body + EOS,
        # load_rows keeps rows with a script and a trace: the body stands for both
        "script": body,
        "trace": "",
        **extra,
    }


def slow_texts(record: dict) -> set:
    """The texts of a GPU record's sampled scripts that compile and run but are slow before they
    run (`dragon_dsl.tvm.compile.launch_problem`: a kernel launched from a host loop, or one that
    leaves the GPU idle): 12% of MetaSchedule's random design-space samples leave it idle. Empty
    for CPU targets."""
    from dragon_dsl import DragonError, to_trace_json
    from dragon_dsl.engine import resolve_target
    from dragon_dsl.tvm.compile import launch_problem
    from dragon_dsl.tvm.workload import load_workload

    if not resolve_target(record["target"]).is_gpu:
        return set()
    workload = load_workload(record["workload"])  # parsed once for all its scripts
    out = set()
    for s in record["scripts"]:
        try:
            trace = to_trace_json(s["text"])
        except DragonError:
            continue
        if launch_problem(trace, workload) is not None:
            out.add(s["text"])
    return out


def rows_of_record(
    record: dict,
    label: dict | None = None,
    improvements: int = 2,
    seed: int = 0,
    ranked: list | None = None,
    keep_slow: bool = False,
    pretrain: bool = True,
    plain: bool = False,
) -> tuple:
    """(pretraining rows, sft rows) of one pretraining record; `label` overrides dlight's script
    as the workload's best ({"body": ..., "source": ...}); `ranked`: texts of measured scripts
    the label beats, the first ones paired with it before unmeasured samples. A sample that is
    slow before it runs (`slow_texts`) is no construction row unless KEEP_SLOW; it stays a script
    an improvement row rewrites. Without PRETRAIN, no pretraining rows (and no launch checks). PLAIN:
    the label is written without the queries whose results nothing uses (`without_unused_queries`)."""
    from dragon_model.data import body_of_text, prompt_text, without_unused_queries

    name, family, target, wl = record["name"], record["family"], record["target"], record["workload"]
    construct = prompt_text(wl, target)
    slow = set() if keep_slow or not pretrain else slow_texts(record)
    bodies = [(s["space"], body_of_text(s["text"])) for s in record["scripts"]]
    taught = [(space, b) for (space, b), s in zip(bodies, record["scripts"]) if s["text"] not in slow]
    dl = record.get("dlight")
    dl_body = body_of_text(dl["text"]) if dl else None
    h = record.get("hash", "")
    pre = (
        [
            _row(name, family, target, wl, "construction", b, construct, n=i, source=space, workload_hash=h)
            for i, (space, b) in enumerate(taught)
        ]
        if pretrain
        else []
    )
    if dl_body and pretrain:
        pre.append(
            _row(
                name,
                family,
                target,
                wl,
                "construction",
                dl_body,
                construct,
                n=len(pre),
                source="dlight",
                workload_hash=h,
            )
        )
    best = label or ({"body": dl_body, "source": "dlight"} if dl_body else None)
    if best is None or best["source"] == "unscheduled":  # no schedule beats the program: nothing to teach
        return pre, []
    measured = {k: best[k] for k in ("latency_us", "dlight_us", "unscheduled_us") if best.get(k) is not None}
    answer = without_unused_queries(best["body"]) if plain else best["body"]
    sft = [
        _row(
            name,
            family,
            target,
            wl,
            "construction",
            answer,
            construct,
            source=best["source"],
            workload_hash=h,
            **measured,
        )
    ]
    rng = random.Random(f"{seed}:{name}")
    first = [b for b in dict.fromkeys(body_of_text(t) for t in (ranked or [])) if b != best["body"]]
    rest = [b for _s, b in bodies if b != best["body"] and b not in first]
    slower = (first + rng.sample(rest, len(rest)))[:improvements]
    for i, b in enumerate(slower):
        sft.append(
            _row(
                name,
                family,
                target,
                wl,
                "improvement",
                answer,
                prompt_text(wl, target, b),
                n=i + 1,
                source=best["source"],
                prompt_script=b,
                workload_hash=h,
                **measured,
            )
        )
    return pre, sft


def corpus_rows(corpus_dir, target_kind: str = "cuda", plain: bool = False) -> list:
    """The measured corpus' rows as sft rows: an answer slower than dlight's measured latency is
    replaced by dlight's script (a GPU answer must reach dlight; the corpus' best of 16 random
    samples often does not); on a CPU one slower than the program as written is left out
    (`data.slower_than_written`, as `data.examples` leaves it out). PLAIN: answers without unused
    queries, as `rows_of_record`."""
    from dragon_dsl.tvm.dlight import dlight_trace
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.data import (
        body_of_text,
        load_rows,
        prompt_text,
        row_target,
        script_body,
        slower_than_written,
        without_unused_queries,
    )

    out = []
    for i, r in enumerate(load_rows(corpus_dir, splits=["train", "valid"], target_kind=target_kind)):
        if slower_than_written(r):
            continue  # not taught: see data.slower_than_written
        body, source = script_body(r["trace"]), "corpus"
        lat, base = r.get("latency_us"), r.get("dlight_us")
        if lat and base and lat > base:
            found = dlight_trace(load_workload(r["workload_text"]), row_target(r))
            if found is None:
                continue
            body, source = script_body(found[1]), "dlight"
        slower = body_of_text(r["prompt_script"]) if r.get("task") == "improvement" and r.get("prompt_script") else None
        if slower == body:
            continue
        row = _row(
            r["workload"],
            r.get("family", ""),
            row_target(r),
            r["workload_text"],
            r.get("task", "construction"),
            without_unused_queries(body) if plain else body,
            prompt_text(r["workload_text"], row_target(r), slower),
            n=f"corpus{i}",
            source=source,
            workload_hash=r.get("workload_hash", ""),
        )
        row["split"] = r.get("split", "train")
        out.append(row)
    return out


def merged_records(pre_dirs: list) -> list:
    """The records of several runs, one per workload: scripts of every run (distinct texts), and
    dlight's script from whichever run has it (runs may sample different spaces of one workload)."""
    by_name: dict = {}
    for d in pre_dirs:
        for p in sorted((Path(d) / "records").glob("*.json")):
            r = json.loads(p.read_text(encoding="utf-8"))
            have = by_name.get(r["name"])
            if have is None:
                by_name[r["name"]] = r
                continue
            texts = {s["text"] for s in have["scripts"]}
            have["scripts"] += [s for s in r["scripts"] if s["text"] not in texts]
            have["dlight"] = have.get("dlight") or r.get("dlight")
    return [by_name[n] for n in sorted(by_name)]


def _work(args) -> tuple:
    record, improvements, measured, keep_slow, pretrain, plain = args
    try:
        label, ranked = measured_label(record, measured) if measured else (None, [])
        pre, sft = rows_of_record(
            record, label, improvements=improvements, ranked=ranked, keep_slow=keep_slow, pretrain=pretrain, plain=plain
        )
    except Exception as exc:
        return [], [], 0, f"{record['name']}: {type(exc).__name__}: {exc}"
    left_out = len(record["scripts"]) + bool(record.get("dlight")) - len(pre) if pretrain else 0
    return pre, sft, left_out  # the slow samples left out


def write_rows(folder: Path, rows: Iterable[dict]) -> int:
    from dragon_dsl.language.files import write_text

    folder.mkdir(parents=True, exist_ok=True)
    rows = list(rows)
    write_text(folder / "rows.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    return len(rows)


def repeated_labels(rows: list, times: int) -> list:
    """ROWS with each training row whose label is a measured script other than dlight's written
    TIMES times (validation rows once): the unmeasured workloads' labels are dlight's scripts, and
    they outnumber the measured ones that beat dlight (tensor-core schedules among them) by far."""
    out = []
    for r in rows:
        out.append(r)
        if r["split"] == "train" and r.get("latency_us") and r.get("source") != "dlight":
            out.extend({**r, "id": f"{r['id']}:again{k}"} for k in range(1, times))
    return out


def build(
    pre_dirs: list,
    out,
    jobs: int = 1,
    improvements: int = 2,
    corpus=None,
    log=print,
    measured=(),
    keep_slow: bool = False,
    pretrain: bool = True,
    label_repeat: int = 1,
    plain: bool = False,
    measured_only: bool = False,
    exclude_families: Iterable = (),
) -> dict:
    """Writes OUT/pretrain/ and OUT/sft/ (only sft/ without PRETRAIN: a fine-tuning run from a
    pretrained model needs no pretraining rows, and rendering them is most of the time).
    LABEL_REPEAT: how often a measured label that is not dlight's script is trained on
    (`repeated_labels`). PLAIN: fine-tuning answers without unused queries (`rows_of_record`).
    MEASURED_ONLY: only the records with a verified measured script (the corpus rows still join):
    elsewhere the label is dlight's script, which outnumbers the measured labels that beat it.
    EXCLUDE_FAMILIES: records of these families are left out (dlight's script for a max reduction
    runs one thread per row: a label worth no teaching)."""
    from multiprocessing import get_context

    excluded = set(exclude_families)
    records = [r for r in merged_records(pre_dirs) if r.get("family") not in excluded]
    by_workload: dict = {}  # workload name -> {candidate id: latency}
    for key, lat in read_measured(measured).items():
        by_workload.setdefault(key.rsplit("|", 1)[0], {})[key] = lat
    if measured_only:
        if not measured:
            raise ValueError("measured_only needs measured results")
        records = [r for r in records if any(v is not None for v in by_workload.get(r["name"], {}).values())]
    pre, sft, errors = [], [], []
    work = [(r, improvements, by_workload.get(r["name"], {}), keep_slow, pretrain, plain) for r in records]
    if jobs > 1:
        with get_context("spawn").Pool(jobs) as pool:
            results = pool.map(_work, work, chunksize=8)
    else:
        results = [_work(w) for w in work]
    slow = 0
    for res in results:
        pre.extend(res[0])
        sft.extend(res[1])
        slow += res[2]
        if len(res) > 3:
            errors.append(res[3])
    if corpus:  # the corpus of the records' target (an llvm corpus beside llvm records)
        from dragon_model.render import target_kind

        kinds = {target_kind(r["target"]) for r in records} or {"cuda"}
        for kind in sorted(kinds):
            sft.extend(corpus_rows(corpus, target_kind=kind, plain=plain))
    out = Path(out)
    labels = [r for r in sft if r["task"] == "construction" and r.get("latency_us")]
    sft = repeated_labels(sft, label_repeat) if label_repeat > 1 else sft
    figures = {
        "workloads": len(records),
        "pretrain_rows": write_rows(out / "pretrain", pre) if pretrain else None,
        "slow_samples_left_out": slow,
        "sft_rows": write_rows(out / "sft", sft),
        "errors": len(errors),
        "measured_labels": len(labels),
        "measured_labels_not_dlight": sum(1 for r in labels if r["source"] != "dlight"),
    }
    (out / "errors.txt").write_text("".join(e + "\n" for e in errors), encoding="utf-8")
    log(json.dumps(figures))
    return figures


def _parser() -> argparse.ArgumentParser:
    """The command line of `python -m dragon_model.records` (the module docstring shows it)."""
    ap = argparse.ArgumentParser(prog="python -m dragon_model.records", description=__doc__.split("\n\n")[0])
    ap.add_argument("pretrain", nargs="+", help="pretraining run folders (with records/)")
    ap.add_argument("--out", help="folder for pretrain/ and sft/ rows")
    ap.add_argument("--batch", help="write a `dragon measure` batch of every record's scripts here instead of rows")
    ap.add_argument(
        "--max-flops",
        type=float,
        help="with --batch: leave out workloads above this many FLOPs (their CPU reference takes minutes)",
    )
    ap.add_argument("--min-flops", type=float, help="with --batch: leave out workloads below this many FLOPs")
    ap.add_argument(
        "--max-bytes",
        type=float,
        help="with --batch: leave out workloads whose parameter buffers "
        "take more bytes (the verifier keeps every input set and output)",
    )
    ap.add_argument(
        "--require-space", help="with --batch: only workloads with a script of this design space (e.g. cuda-tensorcore)"
    )
    ap.add_argument(
        "--per-space",
        type=int,
        help="with --batch: at most this many scripts of each design space "
        "per workload (dlight's script and, on a CPU, the program as written always)",
    )
    ap.add_argument("--families", help="with --batch: only the records of these families (comma-separated)")
    ap.add_argument(
        "--measured",
        action="append",
        default=[],
        help="`dragon measure` results of that batch: labels are the fastest verified scripts "
        "(repeatable); with --batch, the candidates they hold are left out",
    )
    ap.add_argument("--sft-only", action="store_true", help="write only the fine-tuning rows (sft/)")
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="processes rendering records, or with --batch parsing their workloads (default 1)",
    )
    ap.add_argument("--corpus", help="a measured corpus (e.g. data/corpus/cuda) whose rows join the sft rows")
    ap.add_argument("--improvements", type=int, default=2, help="improvement rows per workload (default 2)")
    ap.add_argument(
        "--label-repeat",
        type=int,
        default=1,
        help="train on each measured label that is not dlight's script this many times (default 1)",
    )
    ap.add_argument(
        "--plain-labels",
        action="store_true",
        help="fine-tuning answers without the queries whose results nothing uses (the same schedule)",
    )
    ap.add_argument(
        "--measured-only",
        action="store_true",
        help="only the workloads with a verified measured script (and the corpus' rows): no "
        "dlight-script labels for the workloads nobody measured",
    )
    ap.add_argument(
        "--exclude-families",
        default="",
        help="comma-separated families whose records give no rows (e.g. row_absmax, whose dlight "
        "label runs one thread per row)",
    )
    ap.add_argument(
        "--tasks",
        default=str(TASKS_FILE),
        help="the real networks' tasks with their splits (default: data/tasks/tasks.jsonl.gz): rows are "
        "refused for a record of a task outside the train split",
    )
    ap.add_argument(
        "--keep-slow",
        action="store_true",
        help="GPU targets: keep samples that are slow before they run as construction rows",
    )
    return ap


def main(argv=None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.batch:
        records = merged_records(args.pretrain)
        families = [f for f in args.families.split(",") if f] if args.families else None
        if families is not None:
            have = {r.get("family") for r in records}
            missing = [f for f in families if f not in have]
            if missing:  # a misspelt family would otherwise write an empty batch
                ap.error(
                    f"--families: no record of {', '.join(missing)}; the records' families: "
                    f"{', '.join(sorted(str(f) for f in have))}"
                )
        n = write_batch(
            records,
            args.batch,
            args.max_flops,
            min_flops=args.min_flops,
            require_space=args.require_space,
            per_space=args.per_space,
            skip=frozenset(read_measured(args.measured)),
            max_bytes=args.max_bytes,
            families=families,
            jobs=args.jobs,
        )
        print(json.dumps({"batch": args.batch, "candidates": n}), file=sys.stderr)
        return 0
    if not args.out:
        ap.error("--out is required (or --batch)")
    try:
        train_only(args.pretrain, args.tasks)  # rows are training data: no held-out network's task
    except ValueError as exc:
        ap.error(str(exc))
    if args.measured_only and not args.measured:
        ap.error("--measured-only needs --measured results")
    build(
        args.pretrain,
        args.out,
        jobs=args.jobs,
        improvements=args.improvements,
        corpus=args.corpus,
        log=lambda m: print(m, file=sys.stderr),
        measured=args.measured,
        keep_slow=args.keep_slow,
        pretrain=not args.sft_only,
        label_repeat=args.label_repeat,
        plain=args.plain_labels,
        measured_only=args.measured_only,
        exclude_families=[f for f in args.exclude_families.split(",") if f],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

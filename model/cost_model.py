"""A cost model that chooses what a labelling run measures first.

A labelling run (`benchmarks/gpu_host/labels.sh`) samples far more candidates than one GPU call can
measure. MetaSchedule's evolutionary search measures what its XGBoost cost model, trained on the
measurements so far, ranks fastest; this does the same for the labels: an XGBoost regressor on
MetaSchedule's own per-store features of each candidate (`dragon_dsl.tvm.features`), trained on
every measured candidate's speed over dlight's script of its task (log2 of dlight's latency over
the candidate's), ranks each task's unmeasured candidates, and the batch is written so that every
task's likeliest winners come first (its best-ranked candidate of every task, then its second...).

    python -m dragon_model.cost_model RUN... --measured RESULTS... --evaluate [--folds 5]
    python -m dragon_model.cost_model RUN... --measured RESULTS... --order BATCH.jsonl

`--evaluate` holds tasks out (folds by task) and reports, for a measuring budget of a quarter and
of half of each task's candidates (dlight's script always measured), how often the task's fastest
candidate is among those measured and how close the fastest measured comes to it (geometric
mean), for the model's order, the order the candidates were sampled in, and a random order.
`--order` rewrites a `dragon measure` batch (`records --batch`) in the model's order.
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

#: measuring budgets of the evaluation: shares of a task's candidates other than dlight's script
BUDGETS = (0.25, 0.5)
_EXTRACTORS: dict = {}


def record_features(record: dict) -> dict:
    """candidate id -> feature row (None where the script does not replay or gives no features) of
    every candidate of a pretraining record (`label_batch.label_candidates`)."""
    from dragon_dsl import check_text
    from dragon_dsl.tvm.features import ScheduleFeatures
    from dragon_dsl.tvm.replay import replay
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.data import body_of_text
    from dragon_model.label_batch import candidate_id, label_candidates

    key = json.dumps(record["target"], sort_keys=True)
    if key not in _EXTRACTORS:
        from dragon_dsl.engine import resolve_target

        _EXTRACTORS[key] = ScheduleFeatures(resolve_target(record["target"]).spec)
    mod = load_workload(record["workload"])
    out = {}
    for _source, text in label_candidates(record):
        row = None
        try:
            result = replay(check_text(body_of_text(text))[0], mod)
            if result.ok:
                row = _EXTRACTORS[key].of(result.schedule)
        except Exception:  # a script TVM cannot replay or lower is measured last, as a failure would be
            row = None
        out[candidate_id(record["name"], text)] = row
    return out


def candidate_ids(record: dict) -> list:
    from dragon_model.label_batch import candidate_id, label_candidates

    return [candidate_id(record["name"], t) for _s, t in label_candidates(record)]


def featurize(records: list, known: dict, jobs: int = 0) -> dict:
    """candidate id -> `record_features` row of every candidate of RECORDS: those in KNOWN (features
    computed before: a labelling run orders a batch more than once) as they are, the records with any
    other computed over JOBS processes (0: one a core)."""
    from dragon_model.data import spawned_map

    todo = [r for r in records if any(i not in known for i in candidate_ids(r))]
    feats = dict(known)
    for found in spawned_map(record_features, todo, jobs, parallel_from=8):
        feats.update(found)
    return feats


def read_features(path: Path) -> dict:
    """The features a `--features` file holds (JSON lines of {"id", "row"}); {} for no file."""
    from dragon_dsl.language.files import read_json_lines

    return {x["id"]: x["row"] for x in read_json_lines(path)} if path.exists() else {}


def task_rows(records: list, feats: dict, measured: dict) -> list:
    """Per record with a measured dlight script: (task, [(id, features, speed-up over dlight or
    None where not measured or not verified, source)])."""
    from dragon_model.label_batch import candidate_id, label_candidates

    out = []
    for record in records:
        cands = [(candidate_id(record["name"], t), s) for s, t in label_candidates(record)]
        dl = next((measured.get(i) for i, s in cands if s == "dlight"), None)
        rows = []
        for cid, source in cands:
            lat = measured.get(cid)
            speed = math.log2(dl / lat) if dl and lat else None
            rows.append((cid, feats.get(cid), speed, source))
        out.append((record["name"], dl, rows))
    return out


def fit(rows: list):
    """An XGBoost regressor of log2 speed-up over dlight on ROWS' measured, featured candidates."""
    import numpy as np
    import xgboost

    data = [(f, s) for _cid, f, s, _src in rows if f is not None and s is not None]
    if len(data) < 8:
        raise ValueError(f"{len(data)} measured candidates with features: too few to train a cost model")
    params = {"max_depth": 6, "eta": 0.08, "subsample": 0.8, "objective": "reg:squarederror", "nthread": 2, "seed": 0}
    train = xgboost.DMatrix(np.array([f for f, _ in data]), label=np.array([s for _, s in data]))
    return xgboost.train(params, train, num_boost_round=300)


def predicted(model, rows: list) -> list:
    """Each row's predicted log2 speed-up; a row without features ranks last."""
    import numpy as np

    have = [i for i, r in enumerate(rows) if r[1] is not None]
    out = [-math.inf] * len(rows)
    if have:
        import xgboost

        for i, p in zip(have, model.predict(xgboost.DMatrix(np.array([rows[i][1] for i in have])))):
            out[i] = float(p)
    return out


def best_found(rows: list, order: list, share: float) -> tuple:
    """(found the fastest?, fastest measured / fastest, both as speed-ups) when dlight's script and the
    first SHARE of the other candidates in ORDER (indices into ROWS) are measured."""
    others = [i for i in order if rows[i][3] != "dlight"]
    k = max(1, math.ceil(share * len(others)))
    chosen = {i for i, r in enumerate(rows) if r[3] == "dlight"} | set(others[:k])
    speeds = [r[2] for r in rows if r[2] is not None]
    got = [rows[i][2] for i in chosen if rows[i][2] is not None]
    best, mine = max(speeds), max(got) if got else -math.inf
    return mine >= best, 2.0 ** (mine - best) if got else 0.0


def evaluate(tasks: list, folds: int = 5, seed: int = 0, shuffles: int = 20) -> dict:
    """Held-out ranking quality (module docstring), over tasks with at least 3 measured candidates."""
    usable = [t for t in tasks if t[1] and sum(r[2] is not None for r in t[2]) >= 3]
    rng = random.Random(seed)
    rng.shuffle(usable)
    scores: dict = {(m, b): [] for m in ("model", "sampled", "random") for b in BUDGETS}
    for f in range(folds):
        test = usable[f::folds]
        model = fit([r for i, t in enumerate(usable) if i % folds != f for r in t[2]])
        for _name, _dl, rows in test:
            pred = predicted(model, rows)
            ranked = sorted(range(len(rows)), key=lambda i: -pred[i])
            for b in BUDGETS:
                scores[("model", b)].append(best_found(rows, ranked, b))
                scores[("sampled", b)].append(best_found(rows, list(range(len(rows))), b))
                draws = [best_found(rows, rng.sample(range(len(rows)), len(rows)), b) for _ in range(shuffles)]
                scores[("random", b)].append((sum(d[0] for d in draws) / shuffles, _geo([d[1] for d in draws])))
    return {
        "tasks": len(usable),
        "candidates": sum(len(t[2]) for t in usable),
        "budgets": {
            f"{b:g}": {
                m: {
                    "fastest_found": round(sum(x[0] for x in scores[(m, b)]) / len(usable), 3),
                    "fastest_measured_over_fastest": round(_geo([x[1] for x in scores[(m, b)]]), 3),
                }
                for m in ("model", "sampled", "random")
            }
            for b in BUDGETS
        },
    }


def _geo(xs: list) -> float:
    xs = [max(x, 1e-6) for x in xs]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def order_batch(batch: Path, tasks: list, model) -> int:
    """Rewrite BATCH (`dragon measure` JSON lines) in the model's order: every task's best-ranked
    candidate first, then every task's second, ...; lines of candidates no record names stay last."""
    rank: dict = {}
    for _name, _dl, rows in tasks:
        pred = predicted(model, rows)
        for pos, i in enumerate(sorted(range(len(rows)), key=lambda i: -pred[i])):
            rank[rows[i][0]] = pos
    lines = [ln for ln in batch.read_text(encoding="utf-8").splitlines() if ln.strip()]
    keyed = sorted(enumerate(lines), key=lambda x: (rank.get(json.loads(x[1])["id"], math.inf), x[0]))
    batch.write_text("".join(ln + "\n" for _, ln in keyed), encoding="utf-8")
    return len(lines)


def main(argv=None) -> int:
    import argparse

    from dragon_model.label_batch import read_measured
    from dragon_model.records import merged_records

    ap = argparse.ArgumentParser(prog="python -m dragon_model.cost_model", description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="pretraining run folders (with records/)")
    ap.add_argument("--measured", action="append", required=True, help="`dragon measure` results (repeatable)")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--evaluate", action="store_true", help="held-out ranking quality, as JSON")
    what.add_argument("--order", metavar="BATCH", help="rewrite this `dragon measure` batch in the model's order")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=0, help="processes for the features (0: one a core)")
    ap.add_argument(
        "--features",
        metavar="FILE",
        help="JSON lines of the candidates' features: those it holds are not computed again, the others are added",
    )
    args = ap.parse_args(argv)
    for path in [*args.runs, *args.measured, *([args.order] if args.order else [])]:
        if not Path(path).exists():
            print(f"error: {path}: no such file or folder", file=sys.stderr)
            return 2
    measured = read_measured(args.measured)
    records = merged_records(args.runs)  # one per workload, as `records --batch` writes its candidates
    if args.evaluate:  # only the records of measured tasks take part
        records = [r for r in records if any(i in measured for i in candidate_ids(r))]
    try:
        known = read_features(Path(args.features)) if args.features else {}
        feats = featurize(records, known, args.jobs)
        if args.features and len(feats) > len(known):
            from dragon_dsl.language.files import write_text

            write_text(args.features, "".join(json.dumps({"id": i, "row": r}) + "\n" for i, r in feats.items()))
        tasks = task_rows(records, feats, measured)
        if args.evaluate:
            print(json.dumps(evaluate(tasks, args.folds), indent=1))
        else:
            n = order_batch(Path(args.order), tasks, fit([r for t in tasks for r in t[2]]))
            print(json.dumps({"ordered": n}))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

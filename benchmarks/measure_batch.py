"""The batch `bench_measure.py` measures (`make_batch`): workloads of every family of the target's
corpus, each with its corpus traces and variants of them whose sampling decisions are changed (what
MetaSchedule's evolutionary search does)."""

from __future__ import annotations

import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# --- the batch --------------------------------------------------------------------------------------
def corpus_rows(kind: str) -> list:
    import pyarrow.parquet as pq

    folder = ROOT / "data" / "corpus" / kind / "data"
    rows = []
    for file in sorted(folder.glob("*.parquet")):
        rows += pq.read_table(str(file), columns=["family", "workload", "workload_text", "trace"]).to_pylist()
    return rows


def pick_workloads(rows: list, n: int) -> dict:
    """N workloads spread over every family (round robin, names sorted): {name: (family, text, [traces])}."""
    by_family: dict = {}
    for r in rows:
        entry = by_family.setdefault(r["family"], {}).setdefault(r["workload"], (r["family"], r["workload_text"], []))
        trace = json.loads(r["trace"])
        if trace not in entry[2]:
            entry[2].append(trace)
    families = sorted(by_family)
    queues = {f: sorted(by_family[f]) for f in families}
    chosen: dict = {}
    while len(chosen) < n and any(queues.values()):
        for f in families:
            if queues[f] and len(chosen) < n:
                name = queues[f].pop(0)
                chosen[name] = by_family[f][name]
    return chosen


def variant(trace: list, rng: random.Random):
    """TRACE with one or two sampling decisions changed (None when it has none to change)."""
    insts, decisions = trace
    options = []
    for slot, (index, decision) in enumerate(decisions):
        kind, _, attrs, _ = insts[index]
        if kind == "SamplePerfectTile" and isinstance(decision, list) and len(set(decision)) > 1:
            options.append((slot, "tile", attrs))
        elif kind == "SampleCategorical" and len(attrs[0]) > 1:
            options.append((slot, "categorical", attrs))
    if not options:
        return None
    new = [list(d) for d in decisions]
    for slot, how, attrs in rng.sample(options, k=min(len(options), rng.choice((1, 1, 2)))):
        current = new[slot][1]
        if how == "tile":
            limit = attrs[1] if len(attrs) > 1 and isinstance(attrs[1], int) and attrs[1] > 0 else None
            for _ in range(8):
                perm = list(current)
                rng.shuffle(perm)
                if perm != current and (limit is None or perm[-1] <= limit):
                    new[slot][1] = perm
                    break
        else:
            new[slot][1] = rng.choice([i for i in range(len(attrs[0])) if i != current])
    return [insts, new]


def make_batch(kind: str, n_candidates: int, n_workloads: int, out: Path, seed: int, wl_dir: Path) -> dict:
    from dragon_dsl.engine.keys import trace_hash

    rows = corpus_rows(kind)
    chosen = pick_workloads(rows, n_workloads)
    wl_dir.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    per = -(-n_candidates // len(chosen))
    pools, families = {}, set()
    for name, (family, text, traces) in chosen.items():
        path = wl_dir / f"{name}.tvmscript"
        path.write_text(text, encoding="utf-8")
        seen, mine = set(), []
        for t in traces:
            if trace_hash(t) not in seen:
                seen.add(trace_hash(t))
                mine.append(t)
        for _attempt in range(per * 40):  # up to 3x its share: workloads with few decisions fall short
            if len(mine) >= 3 * per:
                break
            v = variant(rng.choice(traces), rng)
            if v is not None and trace_hash(v) not in seen:
                seen.add(trace_hash(v))
                mine.append(v)
        pools[name] = (path, mine)
        families.add(family)
    # every workload its share where it has one, the shortfall from those with more
    taken = {name: min(per, len(mine)) for name, (_, mine) in pools.items()}
    while sum(taken.values()) < n_candidates and any(taken[n] < len(pools[n][1]) for n in pools):
        for name in pools:
            if taken[name] < len(pools[name][1]) and sum(taken.values()) < n_candidates:
                taken[name] += 1
    lines = [
        {"id": f"{name}/{i}", "workload": str(path), "trace": t}
        for name, (path, mine) in pools.items()
        for i, t in enumerate(mine[: taken[name]])
    ]
    rng.shuffle(lines)  # a labelling batch mixes workloads
    lines = lines[:n_candidates]
    (out / "batch.jsonl").write_text("".join(json.dumps(ln) + "\n" for ln in lines), encoding="utf-8")
    all_families = sorted({r["family"] for r in rows})
    return {
        "candidates": len(lines),
        "workloads": len({ln["workload"] for ln in lines}),
        "families": sorted(families),
        "corpus_families": all_families,
        "every_family": sorted(families) == all_families,
    }

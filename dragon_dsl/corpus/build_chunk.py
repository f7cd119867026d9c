"""One chunk of a corpus build, measured: the chosen scripts of a few workloads (and, at level
"time", their baselines) in one engine call, turned into the corpus' rows and the reasons for
what was dropped. `build.build_corpus` calls it once per chunk; the rows' format is build.py's.
"""

from __future__ import annotations

import hashlib

from dragon_dsl.corpus.build import canonical, make_script, split_of


def measure_chunk(engine, chunk, target, cfg, test_families, explain) -> dict:
    """{workload: {"rows": [...], "dropped": {reason: n}}} for a chunk of plans, measured in one
    engine call (the scripts and, at level "time", the baselines)."""
    from dragon_dsl.corpus.search_run import baseline_kinds, baselines_of
    from dragon_dsl.engine import Task

    # level "time" measures everything again; level "verify" re-verifies every script and
    # keeps the latencies the search measured (each candidate verified, then timed)
    timed = cfg.level == "time"
    kinds = baseline_kinds(engine.target) if timed else []
    tasks, spans = [], []
    for plan in chunk:
        traces = [plan["best"]["trace"]] + [c["trace"] for c in plan["slower"]]
        spans.append((len(tasks), len(traces)))
        tasks += [Task(plan["text"], t, level=cfg.level, use_cache=False) for t in traces]
    results = engine.run(tasks, baselines=[(plan["text"], k) for plan in chunk for k in kinds])
    base_results = results[len(tasks) :]
    out = {}
    for i, (plan, (start, n)) in enumerate(zip(chunk, spans)):
        rec = plan["record"]
        rows, dropped = [], {}
        out[rec["workload"]] = {"rows": rows, "dropped": dropped}

        def drop(reason: str, count: int = 1):
            dropped[reason] = dropped.get(reason, 0) + count

        best_r, slower_r = results[start], results[start + 1 : start + n]
        if not best_r.ok:
            drop(f"best script failed re-verification ({best_r.status.value})", 1 + len(slower_r))
            continue
        base = (
            baselines_of(zip(kinds, base_results[i * len(kinds) : (i + 1) * len(kinds)]))
            if timed
            else dict(rec["baselines"])
        )
        common = {
            "family": rec["family"],
            "workload": rec["workload"],
            "workload_hash": rec["workload_hash"],
            "params": canonical(rec["params"]),
            "target": canonical(target),
            "workload_text": plan["text"],
            "split": split_of(rec["family"], rec["params"], test_families, cfg),
            "unscheduled_us": base["unscheduled_us"],
            "dlight_us": base["dlight_us"],
        }
        try:
            best_script, best_trace = make_script(
                plan["best"]["trace"], rec["workload_file"], target, plan["path"], explain
            )
        except Exception as exc:  # the codec raises DragonError; explain may raise anything
            drop(f"script: {exc}", 1 + len(slower_r))
            continue
        best_lat = best_r.latency_us if timed else plan["best"]["latency_us"]
        answer = {"script": best_script, "trace": canonical(best_trace), "latency_us": best_lat}
        rows.append(
            {
                "id": f"{rec['workload']}/construction",
                "task": "construction",
                **common,
                "prompt_script": None,
                "prompt_latency_us": None,
                **answer,
            }
        )
        for cand, res in zip(plan["slower"], slower_r):
            if not res.ok:
                drop(f"slower script failed re-verification ({res.status.value})")
                continue
            lat = res.latency_us if timed else cand["latency_us"]
            if best_lat is not None and lat is not None and lat < cfg.slower * best_lat:
                drop(f"slower script no longer >= {cfg.slower}x the best when measured again")
                continue
            try:
                prompt, _ = make_script(cand["trace"], rec["workload_file"], target, plan["path"], explain)
            except Exception as exc:  # as above
                drop(f"script: {exc}")
                continue
            tag = hashlib.sha256(canonical(cand["trace"]).encode()).hexdigest()[:12]
            rows.append(
                {
                    "id": f"{rec['workload']}/improvement/{tag}",
                    "task": "improvement",
                    **common,
                    "prompt_script": prompt,
                    "prompt_latency_us": lat,
                    **answer,
                }
            )
    return out

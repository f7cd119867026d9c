"""The workload generator: distinct, deterministic, buildable, resumable."""

from __future__ import annotations

import json

from dragon_dsl.cli.main import main as dragon_main
from dragon_dsl.corpus.families import FAMILIES
from dragon_dsl.corpus.generator import generate, write
from dragon_dsl.tvm.workload import load_workload


def test_at_least_5000_distinct_specs_over_every_family():
    specs = generate(5000, seed=0)
    assert len(specs) == len(set(specs)) == 5000
    assert len({s.name for s in specs}) == 5000, "names identify specs"
    assert {s.family for s in specs} == set(FAMILIES)
    assert generate(5000, seed=0) == specs, "deterministic for a seed"
    assert generate(50, seed=1) != specs[:50]


def test_every_family_builds_and_duplicates_are_dropped(tmp_path):
    specs = generate(len(FAMILIES) * 2, seed=3)
    rows = write(specs + specs[:3], tmp_path)  # the repeated specs hash the same
    assert len(rows) == len(specs)
    assert {r["family"] for r in rows} == set(FAMILIES)
    for r in rows:
        mod = load_workload(tmp_path / f"{r['name']}.tvmscript")
        assert "main" in [g.name_hint for g in mod.get_global_vars()]
    assert write(specs, tmp_path) == [], "a second run adds nothing (resumable)"
    lines = (tmp_path / "manifest.jsonl").read_text().splitlines()
    assert len(lines) == len(specs) and len({json.loads(x)["hash"] for x in lines}) == len(specs)


def test_workloads_command(tmp_path, capsys):
    assert dragon_main(["workloads", "--count", "5", "--families", "matmul,softmax", "-o", str(tmp_path)]) == 0
    assert len(list(tmp_path.glob("*.tvmscript"))) == 5
    assert dragon_main(["workloads", "--count", "5", "--families", "nope", "-o", str(tmp_path)]) == 2


def test_max_flops_caps_the_work_and_still_reaches_the_count(tmp_path, capsys):
    cap = 5e7
    assert dragon_main(["workloads", "--count", "6", "--seed", "4", "--max-flops", str(cap), "-o", str(tmp_path)]) == 0
    rows = [json.loads(x) for x in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(0 <= r["flops"] <= cap for r in rows)
    uncapped = write(generate(6, seed=4), tmp_path / "all")
    assert max(r["flops"] for r in uncapped) > cap, "the cap must have left something out for this seed"
    assert dragon_main(["workloads", "--count", "2", "--max-flops", "0", "-o", str(tmp_path)]) == 2
    assert (
        dragon_main(["workloads", "--count", "3", "--seed", "4", "--max-bytes", "2e5", "-o", str(tmp_path / "small")])
        == 0
    )
    small = [json.loads(x) for x in (tmp_path / "small" / "manifest.jsonl").read_text().splitlines()]
    assert len(small) == 3 and all(0 < r["bytes"] <= 2e5 for r in small)


def test_starting_scripts_give_each_workload_an_improvement_task(tmp_path, capsys):
    from dragon_dsl import check_text, to_trace_json
    from dragon_dsl.eval.discover import discover

    args = ["workloads", "--count", "2", "--families", "softmax,elementwise", "--max-flops", "1e6", "-o", str(tmp_path)]
    assert dragon_main(args + ["--starting-scripts", "nope"]) == 2
    assert "--starting-scripts" in capsys.readouterr().err and not list(tmp_path.glob("*")), (
        "a bad target writes nothing"
    )
    assert dragon_main(args + ["--starting-scripts", "cuda"]) == 0
    entries, problems = discover(tmp_path)
    assert len(entries) == 2 and not problems
    for e in entries:
        assert [p.name for p in e.scripts] == [f"{e.name}.dragon"]
        program, diagnostics = check_text(e.scripts[0].read_text())
        assert not diagnostics and program.workload == f"{e.name}.tvmscript" and program.target == "nvidia/nvidia-h100"
        assert len(to_trace_json(e.scripts[0].read_text())[0]) > 3, "a schedule, not an empty script"
    mine = entries[0].scripts[0]
    mine.write_text(mine.read_text() + "\n# mine\n")
    assert dragon_main(args + ["--starting-scripts", "cuda"]) == 0
    assert mine.read_text().endswith("# mine\n"), "a script already there is kept"

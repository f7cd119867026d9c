"""The pretraining set: valid, complete scripts sampled from MetaSchedule's design spaces.

    dragon corpus pretrain --out PRE --target cuda --count 5000 --per-space 16 [--shard 0/4]

No script here is measured: each teaches validity. For every workload (the generator's
classic families and today's operators, fp16 and fp32, the held-out real operators and the
CUDA corpus' test families left out) the target's design spaces are sampled
(`dragon_dsl.tvm.design_space`: MetaSchedule's rules, post-processors and, for fp16/bf16/int8
GEMM-like operators on CUDA, its tensor-core space), each distinct trace is turned into a
Dragon script that must encode back to the same trace, and the script is kept only when it
passes the compile check every shown script passes (replay, the GPU checks, `tvm.compile`).

Resumable and sharded like the corpus search: a workload is done exactly when its record
`PRE/records/NAME.json` exists (written atomically), so a killed run continues where it
stopped with nothing lost or done twice; `PRE/config.json` fixes the configuration, and a
restart with another one is refused. Shards split workloads by a stable hash of their name.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dragon_dsl.corpus.families import ALL_FAMILIES, HELD_OUT_OPERATORS
from dragon_dsl.corpus.generator import WorkloadSpec, generate
from dragon_dsl.corpus.search_run import RunConfigError, shard_of
from dragon_dsl.language.files import write_json

FORMAT = 1


@dataclass(frozen=True)
class PretrainConfig:
    target: str = "cuda"
    count: int = 5000
    seed: int = 0
    per_space: int = 16
    #: families never sampled (the test families of the shipped corpora)
    exclude_families: tuple = ()
    #: what to sample: "dlight" and/or design spaces ("llvm", "cuda", "cuda-tensorcore"); empty:
    #: dlight (GPU targets) and every design space of the target
    spaces: tuple = ()
    families: tuple = field(default_factory=lambda: tuple(sorted(ALL_FAMILIES)))
    #: a merged tasks.jsonl of real networks (`python -m dragon_dsl.corpus.networks`): its tasks
    #: of SPLIT are the workloads instead of the generator's
    tasks: str = ""
    split: str = "train"
    #: with TASKS: only tasks of at least this many FLOPs (a run for the GEMMs and convolutions,
    #: which the cheapest-first order reaches last)
    min_flops: float = 0.0

    def to_json(self) -> dict:
        d = json.loads(json.dumps(asdict(self)))  # tuples as the lists a re-read config.json holds
        if self.tasks:  # the file's name, not its place: a run resumes on another machine
            d["tasks"] = Path(self.tasks).name
        if not self.min_flops:  # the configuration of runs made before the option
            del d["min_flops"]
        d["format"] = FORMAT
        return d


@dataclass(frozen=True)
class TaskSpec:
    """A task of a real network (a line of tasks.jsonl) as the sampler's workload: its name joins the
    fused function's name and the task's structural hash, so it is unique and says what it is."""

    task_id: str
    fused: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.fused[:80]}-{self.task_id}"

    @property
    def family(self) -> str:
        return self.fused

    @property
    def params(self) -> tuple:
        return (("task", self.task_id),)

    def build(self):
        from dragon_dsl.tvm.workload import load_workload

        return load_workload(self.text)


def task_specs(path, split: str, min_flops: float = 0.0) -> list:
    """The tasks of SPLIT in a merged tasks.jsonl, cheapest to sample first (fewest FLOPs, then id): a
    run stopped early has covered the most tasks; MIN_FLOPS leaves the smaller ones out. A file without
    splits is refused: sampling held-out networks' tasks for training would leak them."""
    from dragon_dsl.corpus.networks.driver import read_tasks

    if split not in ("train", "validation", "test"):
        raise ValueError(f"--split {split!r}: one of train, validation, test")
    tasks = read_tasks(path)
    if tasks and "split" not in tasks[0]:
        raise ValueError(f"{path}: its tasks have no split; merge them with --splits data/tasks/splits.json")
    chosen = [t for t in tasks if t.get("split") == split and float(t["flops"]) >= min_flops]
    chosen.sort(key=lambda t: (float(t["flops"]), t["id"]))
    return [TaskSpec(str(t["id"]), t["name"], t["text"]) for t in chosen]


def workload_specs(cfg: PretrainConfig) -> list:
    """The workloads of a configuration, in a fixed order; held-out real operators never appear."""
    if cfg.tasks:
        return task_specs(cfg.tasks, cfg.split, cfg.min_flops)[: cfg.count]
    held = {WorkloadSpec(f, p) for f, p in HELD_OUT_OPERATORS}
    families = [f for f in cfg.families if f not in cfg.exclude_families]
    return [s for s in generate(cfg.count + len(held), seed=cfg.seed, families=families) if s not in held][: cfg.count]


def held_out_hashes() -> set:
    """Structural hashes of the held-out operators (another family can build the same module)."""
    from dragon_dsl.tvm.workload import structural_hash

    return {structural_hash(WorkloadSpec(f, p).build()) for f, p in HELD_OUT_OPERATORS}


class PretrainRun:
    def __init__(self, out_dir, config: PretrainConfig):
        self.out = Path(out_dir)
        self.config = config
        self.records = self.out / "records"

    def open(self) -> None:
        self.records.mkdir(parents=True, exist_ok=True)
        path = self.out / "config.json"
        want = self.config.to_json()
        if path.exists():
            have = json.loads(path.read_text(encoding="utf-8"))
            if have != want:
                diff = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
                raise RunConfigError(
                    f"{path} holds another configuration (differs in {', '.join(diff)}); "
                    f"use another --out or the same settings"
                )
        else:
            write_json(path, want)
        if self.config.tasks:
            self._check_split()

    def _check_split(self) -> None:
        """A run over real networks' tasks holds records of its split's tasks alone: records carried
        in from a run over another tasks file (or another split) would put held-out networks' tasks
        into training. Raises RunConfigError naming the first stranger."""
        allowed = {s.name for s in task_specs(self.config.tasks, self.config.split)}
        strangers = sorted(p.stem for p in self.records.glob("*.json") if p.stem not in allowed)
        if strangers:
            raise RunConfigError(
                f"{self.records}: {len(strangers)} record(s) of tasks outside the {self.config.split!r} split of "
                f"{self.config.tasks} (first: {strangers[0]}); remove them or use another --out"
            )

    def pending(self, shard=(0, 1), limit: int | None = None) -> list:
        i, n = shard
        todo = [
            s
            for s in workload_specs(self.config)
            if shard_of(s.name, n) == i and not (self.records / f"{s.name}.json").exists()
        ]
        return todo[:limit] if limit is not None else todo

    def run(self, shard=(0, 1), limit: int | None = None, progress=None) -> Counter:
        """Samples every pending workload of the shard; returns counts over this call."""
        from dragon_dsl.engine import resolve_target
        from dragon_dsl.tvm.design_space import SpaceSampler
        from dragon_dsl.tvm.target import tune_target

        self.open()
        todo = self.pending(shard, limit)
        totals: Counter = Counter()
        if not todo:
            return totals
        header = resolve_target(self.config.target).spec  # "cuda" -> the tag the CUDA corpus uses
        sampler = SpaceSampler(tune_target(header))
        held = held_out_hashes()
        for k, spec in enumerate(todo):
            record = sample_workload(spec, sampler, self.config, held, header)
            write_json(self.records / f"{spec.name}.json", record)
            totals["workloads"] += 1
            totals["scripts"] += len(record["scripts"])
            totals.update({f"rejected:{r}": c for r, c in record["rejected"].items()})
            if progress:
                progress(k + 1, len(todo), spec.name, record)
        return totals


def workload_seed(cfg: PretrainConfig, name: str, space: str) -> int:
    return shard_of(f"{cfg.seed}:{name}:{space}", 2**31 - 1)


def sample_workload(spec: WorkloadSpec, sampler, cfg: PretrainConfig, held: set, header) -> dict:
    """The record of one workload: every distinct sampled script that round-trips and compiles."""
    from dragon_dsl.tvm.compile.scripts import checked_scripts
    from dragon_dsl.tvm.errors import tvm_message
    from dragon_dsl.tvm.workload import structural_hash, workload_text

    t0 = time.monotonic()
    mod = spec.build()
    h = structural_hash(mod)
    record = {
        "name": spec.name,
        "family": spec.family,
        "params": dict(spec.params),
        "hash": h,
        "target": header,
        "workload": workload_text(mod),
        "scripts": [],
        "rejected": {},
    }
    rejected: Counter = Counter()
    if h in held:
        rejected["held_out"] += 1
        record.update(rejected=dict(rejected), seconds=round(time.monotonic() - t0, 2))
        return record
    seen: set = set()
    workload_file = f"{spec.name}.tvmscript"
    wanted = set(cfg.spaces)
    if str(sampler.target.kind.name) == "cuda" and (not wanted or "dlight" in wanted):
        record["dlight"] = dlight_script(mod, sampler.target, workload_file, header, rejected)
    for space in sampler.spaces(mod):
        if wanted and space not in wanted:
            continue
        try:
            traces = sampler.sample(mod, space, cfg.per_space, workload_seed(cfg, spec.name, space))
        except Exception as exc:  # a rule TVM cannot apply to this workload: the space is empty here
            rejected[f"space:{space}"] += 1
            record.setdefault("space_errors", {})[space] = tvm_message(exc, 300)
            continue
        fresh = []
        for trace in traces:
            key = json.dumps(trace, sort_keys=True)
            if key in seen:
                rejected["duplicate"] += 1
                continue
            seen.add(key)
            fresh.append(trace)
        for text, statements in checked_scripts(fresh, mod, sampler.target, workload_file, header, rejected):
            record["scripts"].append({"space": space, "text": text, "statements": statements})
    record.update(rejected=dict(rejected), seconds=round(time.monotonic() - t0, 2))
    return record


def starting_script(mod, sampler, workload_file: str, header, seed: int, tries: int = 8) -> str | None:
    """An acceptable schedule to improve on (the improvement task's start): the first of up to TRIES
    samples of the target's first design space (not the tensor-core one) that `checked_scripts`
    keeps, or None. Sampled, not measured: usually slower than a tuned one."""
    from dragon_dsl.tvm.compile.scripts import checked_scripts

    space = next((s for s in sampler.spaces(mod) if s != "cuda-tensorcore"), None)
    if space is None:
        return None
    traces = sampler.sample(mod, space, tries, seed)
    return next(
        (text for text, _ in checked_scripts(traces, mod, sampler.target, workload_file, header, Counter())), None
    )


def dlight_script(mod, target, workload_file: str, header, rejected: Counter) -> dict | None:
    """dlight's schedule of the workload as a checked script (a label that needs no search), or None."""
    from dragon_dsl.tvm.compile import compile_checked
    from dragon_dsl.tvm.compile.scripts import exact_script
    from dragon_dsl.tvm.dlight import dlight_trace

    try:
        found = dlight_trace(mod, target)
        if found is None:
            rejected["dlight:none"] += 1
            return None
        rule, trace = found
        text, encoded = exact_script(trace, workload_file, header)
        compile_checked(mod, {"trace": encoded}, target)
    except Exception:
        rejected["dlight:error"] += 1
        return None
    return {"rule": rule, "text": text, "statements": len(encoded[0])}


def read_records(out_dir) -> list:
    """Every finished record of a run (any shard), sorted by name."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((Path(out_dir) / "records").glob("*.json"))]


def summary(out_dir) -> dict:
    recs = read_records(out_dir)
    scripts = [s for r in recs for s in r["scripts"]]
    rejected: Counter = Counter()
    for r in recs:
        rejected.update(r["rejected"])
    return {
        "workloads": len(recs),
        "with_scripts": sum(1 for r in recs if r["scripts"]),
        "scripts": len(scripts),
        "dlight_scripts": sum(1 for r in recs if r.get("dlight")),
        "tensor_core_scripts": sum(1 for s in scripts if s["space"] == "cuda-tensorcore"),
        "families": len({r["family"] for r in recs}),
        "rejected": dict(rejected),
        "seconds": round(sum(r["seconds"] for r in recs), 1),
    }


def main(argv=None) -> int:
    """`python -m dragon_dsl.corpus.pretrain` (also `dragon corpus pretrain`)."""
    import argparse

    ap = argparse.ArgumentParser(prog="dragon corpus pretrain", description=__doc__.split("\n\n")[0])
    add_arguments(ap)
    args = ap.parse_args(argv)
    return run_command(args)


def add_arguments(ap) -> None:
    ap.add_argument("--out", required=True, help="run folder (created; resumed when it exists)")
    ap.add_argument("--target", default="cuda", help="llvm, cuda or a TVM target tag (default cuda)")
    ap.add_argument("--count", type=int, default=5000, help="workloads in the run (default 5000)")
    ap.add_argument("--seed", type=int, default=0, help="workload generator seed (default 0)")
    ap.add_argument("--per-space", type=int, default=16, help="samples per design space and workload (default 16)")
    ap.add_argument("--exclude-families", default="", help="comma-separated families never sampled")
    ap.add_argument(
        "--spaces",
        default="",
        help="comma-separated: dlight and/or design spaces (llvm, cuda, "
        "cuda-tensorcore); default: dlight on GPUs and every design space of the target",
    )
    ap.add_argument(
        "--tasks",
        default="",
        help="a merged tasks.jsonl of real networks: sample its tasks of --split instead of generated workloads",
    )
    ap.add_argument("--split", default="train", help="with --tasks: train, validation or test (default train)")
    ap.add_argument(
        "--min-flops",
        type=float,
        default=0.0,
        help="with --tasks: only tasks of at least this many FLOPs (the cheapest are sampled first otherwise)",
    )
    ap.add_argument("--shard", default="0/1", help="i/n: this process takes the workloads of shard i of n")
    ap.add_argument("--limit", type=int, default=None, help="stop after this many workloads")
    ap.add_argument("--summary", action="store_true", help="print the run's counts and exit")


def run_command(args) -> int:
    import sys

    from dragon_dsl.corpus.search_run import parse_shard

    if args.summary:
        print(json.dumps(summary(args.out), indent=1))
        return 0
    try:
        shard = parse_shard(args.shard)
        cfg = PretrainConfig(
            target=args.target,
            count=args.count,
            seed=args.seed,
            per_space=args.per_space,
            exclude_families=tuple(sorted(f for f in args.exclude_families.split(",") if f)),
            spaces=tuple(sorted(x for x in args.spaces.split(",") if x)),
            tasks=args.tasks,
            split=args.split,
            min_flops=args.min_flops,
        )
        run = PretrainRun(args.out, cfg)
        run.open()
    except (RunConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    def progress(k, n, name, record):
        print(
            f"[{k}/{n}] {name}: {len(record['scripts'])} scripts in {record['seconds']} s "
            f"(rejected {record['rejected']})",
            flush=True,
        )

    totals = run.run(shard, args.limit, progress)
    print(json.dumps(dict(totals)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

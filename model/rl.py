"""Reinforcement learning from execution: TRL's GRPO with a reward from the measurement engine.

    dragon train rl CORPUS_DIR --model SFT_DIR -o OUT [--steps 50] [--generations 4] [--level time]

The policy samples scripts freely (no grammar mask: RL teaches it to need the mask less).
Each completion's reward is partial credit for each stage it passes, and a latency reward
only once the numeric check has passed:

    does not parse                0.0
    parses                        0.1
    type-checks                   0.2
    replays on the workload       0.4   (TVM applies it; repaired decisions count as failures)
    builds                        0.6   (it then failed to run, verify or finish in time)
    verified                      0.8 + 0.4 * clip(log2(baseline / latency), -1, 3) / 3
    verified, > 10x the baseline  0.6   (a kernel that slow is a failure, whatever it computes)

The baseline is dlight's schedule on GPU targets (the unscheduled program does not build
there) and the unscheduled program on CPUs.

It cannot be gamed: every completion is measured again (`use_cache=False`: no cached
result answers), the engine's verifier compares against the unscheduled workload on
seeded random inputs plus edge values with NaN-poisoned outputs (an output left unwritten
fails), and the latency is the engine's own timing of the built kernel, never a figure
taken from the text. With `--level verify` (toy runs) verified completions get 0.8.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

#: a verified completion slower than SLOW_FACTOR x the baseline earns no more than a build
from dragon_dsl.levels import is_slow

#: reward by the highest level of the check ladder (dragon_dsl.levels.LEVELS) a completion passed
STAGE_REWARD = {"none": 0.0, "syntax": 0.1, "types": 0.2, "replay": 0.4, "build": 0.6}


class EngineReward:
    """The reward function TRL calls: (prompts, completions, workload_text=[...], target=[...]) -> rewards."""

    __name__ = "engine_reward"

    def __init__(self, engine, level: str = "time", log=None):
        self.engine = engine
        self.level = level
        self.log = log
        self._baselines: dict = {}
        self.history: list = []

    def stage_of(self, text: str, workload_text: str):
        """(the highest level of the check ladder the script passed before the engine, or "none";
        the replayed trace or None). A type error has passed "syntax"; a script that replays has
        passed "replay" and goes to the engine."""
        from dragon_dsl.levels import check_text_at_level

        report = check_text_at_level(text, level="replay", workload=workload_text)
        return (report.passed or "none"), report.trace

    def __call__(self, prompts, completions, workload_text=None, **kwargs) -> list[float]:
        from dragon_model.tokenizer import EOS

        rewards: list[float | None] = [None] * len(completions)
        pending: dict[str, list] = {}
        for i, completion in enumerate(completions):
            text = completion if isinstance(completion, str) else str(completion)
            text = text.split(EOS)[0]
            stage, trace = self.stage_of(text, workload_text[i])
            if trace is None:
                rewards[i] = STAGE_REWARD[stage]
            else:
                pending.setdefault(workload_text[i], []).append((i, trace))
        for wl, items in pending.items():
            results = self.engine.measure(wl, [t for _i, t in items], level=self.level, use_cache=False)
            for (i, _t), res in zip(items, results):
                rewards[i] = self.score(wl, res)
        self.history.extend(rewards)
        return [float(r) for r in rewards]

    def score(self, workload_text: str, res) -> float:
        if not res.ok:
            return (
                STAGE_REWARD["replay"] if res.status.value in ("replay_error", "build_error") else STAGE_REWARD["build"]
            )
        if self.level != "time" or not res.latency_us:
            return 0.8
        base = self._baseline(workload_text)
        if not base:
            return 0.8
        if is_slow(res.latency_us, base):  # verified, but a failure for a user: no more than a build
            return STAGE_REWARD["build"]
        gain = max(-1.0, min(3.0, math.log2(base / res.latency_us)))
        return 0.8 + 0.4 * gain / 3.0

    def _baseline(self, workload_text: str) -> float | None:
        """The latency a completion is rewarded against: dlight's schedule on a GPU target (the
        unscheduled program does not build there), the unscheduled program on a CPU."""
        if workload_text not in self._baselines:
            kind = "dlight" if self.engine.target.is_gpu else "unscheduled"
            base = self.engine.baseline(workload_text, kind=kind)
            self._baselines[workload_text] = base.latency_us if base.ok else None
        return self._baselines[workload_text]


def rl_prompts(rows, *, canonical_names: bool = False) -> list[dict]:
    """One prompt per workload of ROWS (the reward measures, it needs no reference script): its text
    and the workload the reward measures. CANONICAL_NAMES (a model trained so): the workload under
    its prompt's canonical names (`renaming.canonical_mapping`), as `Generator` gives it to such a model."""
    from dragon_model.data import prompt_text, row_target
    from dragon_model.renaming import canonical_workload

    seen, prompts = set(), []
    for r in rows:
        if r["workload_hash"] in seen:
            continue
        seen.add(r["workload_hash"])
        text, target = r["workload_text"], row_target(r)
        if canonical_names:
            text = canonical_workload(text, target)[0]
        prompts.append({"prompt": prompt_text(text, target), "workload_text": text})
    return prompts


def train_rl(
    corpus,
    model_path,
    out,
    *,
    target: str = "llvm",
    steps: int = 50,
    generations: int = 4,
    max_completion_length: int = 0,
    lr: float = 1e-5,
    level: str = "time",
    limit: int = 0,
    beta: float = 0.0,
    seed: int = 0,
    log=print,
) -> dict:
    import datasets
    from trl import GRPOTrainer

    from dragon_dsl.engine import Engine
    from dragon_model.data import load_rows, script_body
    from dragon_model.generate import load_model
    from dragon_model.prompts import plain_prompt

    t0 = time.time()
    info_path = Path(model_path) / "dragon_model.json"
    info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.exists() else {}
    rows = load_rows(corpus, splits=["train"], target_kind=target, tasks=["construction"])
    prompts = rl_prompts(rows, canonical_names=bool(info.get("canonical_names")))
    if limit:
        prompts = prompts[:limit]
    if not prompts:
        raise ValueError(f"{corpus}: no training workloads for target {target}")
    model, tokenizer = load_model(model_path)
    if not max_completion_length:  # above the longest script of the corpus, so no completion is cut
        longest = max(
            len(
                tokenizer(script_body(r["trace"]) if r.get("trace") else r["script"], add_special_tokens=False)[
                    "input_ids"
                ]
            )
            for r in rows
        )
        max_completion_length = longest + 64
    for p in prompts:
        p["prompt"] = plain_prompt(tokenizer, p["prompt"])
    spec = {"kind": "llvm", "num-cores": 1} if target == "llvm" else target
    engine = Engine(spec, cache=False, timeout_s=60.0)
    reward = EngineReward(engine, level=level)
    args = _grpo_config(out, tokenizer, steps, generations, max_completion_length, lr, beta, seed)
    try:
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=[reward],
            args=args,
            train_dataset=datasets.Dataset.from_list(prompts),
            processing_class=tokenizer,
        )
        trainer.train()
    finally:
        engine.close()
    hist = reward.history
    half = max(1, len(hist) // 2)
    figures = {
        "steps": steps,
        "completions": len(hist),
        "workloads": len(prompts),
        "level": level,
        "mean_reward_first_half": sum(hist[:half]) / half if hist else None,
        "mean_reward_second_half": sum(hist[half:]) / max(1, len(hist) - half) if hist else None,
        "verified_fraction": sum(r >= 0.8 for r in hist) / len(hist) if hist else None,
        "rl_seconds": round(time.time() - t0, 1),
    }
    _save(trainer.model, tokenizer, out, info, target=target, corpus=corpus, figures=figures)
    log(f"rl: saved to {out}: " + json.dumps(figures))
    return figures


def _grpo_config(out, tokenizer, steps, generations, max_completion_length, lr, beta, seed):
    """TRL's GRPO arguments: GENERATIONS completions a workload, one batch of them a step."""
    import torch
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(Path(out) / "checkpoints"),
        max_steps=steps,
        learning_rate=lr,
        beta=beta,
        num_generations=generations,
        per_device_train_batch_size=generations,
        gradient_accumulation_steps=1,
        max_completion_length=max_completion_length,
        temperature=1.0,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=seed,
        use_cpu=not torch.cuda.is_available(),
        bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported(),
        disable_tqdm=True,
        generation_kwargs={"eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id},
    )


def _save(model, tokenizer, out, info: dict, *, target, corpus, figures: dict) -> None:
    """The RL model saved with the facts of the model it started from (INFO, its dragon_model.json)
    and, beside the RL figures, its SFT figures."""
    from dragon_model.train import save

    # what the model was trained on and how it reads prompts (instructions, literals, longest script,
    # canonical names) stays true after RL: Generator reads it from the RL model's folder too
    facts = {
        k: v for k, v in info.items() if k not in ("target", "base", "lora", "corpus", "corpus_manifest", "stages")
    }
    save(
        model,
        tokenizer,
        out,
        target=target,
        corpus=corpus,
        figures=figures,
        base=info.get("base"),
        lora=bool(info.get("lora")),
        stage="rl",
        extra=facts,
    )
    if info.get("stages", {}).get("sft"):  # keep the SFT figures beside the RL ones
        new = json.loads((Path(out) / "dragon_model.json").read_text(encoding="utf-8"))
        new.setdefault("stages", {}).setdefault("sft", info["stages"]["sft"])
        (Path(out) / "dragon_model.json").write_text(json.dumps(new, indent=2, default=str) + "\n", encoding="utf-8")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("corpus", help="corpus folder (its train split's workloads are the prompts)")
    p.add_argument("--model", required=True, help="the SFT model folder to start from")
    p.add_argument("-o", "--output", required=True, help="folder for the trained model")
    p.add_argument(
        "--target", default="llvm", help="target the rewards are measured on: llvm (default), cuda, a tag or JSON"
    )
    p.add_argument("--steps", type=int, default=50, help="GRPO steps (default 50)")
    p.add_argument("--generations", type=int, default=4, help="completions per prompt (GRPO group size)")
    p.add_argument(
        "--max-completion-length",
        type=int,
        default=0,
        help="tokens per completion (default: the corpus' longest script + 64, so none is cut)",
    )
    p.add_argument("--lr", type=float, default=1e-5, help="learning rate (default 1e-5)")
    p.add_argument("--beta", type=float, default=0.0, help="KL coefficient")
    p.add_argument(
        "--level",
        choices=("verify", "time"),
        default="time",
        help="time: latency reward after verification; verify: correctness only (toy runs)",
    )
    p.add_argument("--limit", type=int, default=0, help="use only the first N workloads")
    p.add_argument("--seed", type=int, default=0, help="seed of sampling and prompt order (default 0)")


def run(args) -> int:
    train_rl(
        args.corpus,
        args.model,
        args.output,
        target=args.target,
        steps=args.steps,
        generations=args.generations,
        max_completion_length=args.max_completion_length,
        lr=args.lr,
        level=args.level,
        limit=args.limit,
        beta=args.beta,
        seed=args.seed,
        log=lambda m: print(m, file=sys.stderr),
    )
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dragon_model.rl", description="GRPO from execution")
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

"""Supervised training (SFT) on construction and improvement examples, with the HF Trainer.

    dragon train sft CORPUS_DIR -o OUT [--target llvm] [--size small] [--epochs 3] [--max-length 4096]
    dragon train sft CORPUS_DIR -o OUT --base /path/to/hf-causal-lm [--lora]

Without `--base`, the model is a small decoder-only transformer (`LlamaConfig`,
random initialisation) over the Dragon tokenizer (`tokenizer.py`). With `--base`,
any local Hugging Face causal LM is fine-tuned with its own tokenizer (the prompt's
special tokens are added to it), fully or through LoRA adapters (`--lora`, peft).
The loss covers only the completion (the script), never the prompt.

Multi-GPU on one host: `accelerate launch -m dragon_model.train ...` or
`torchrun --nproc-per-node N -m dragon_model.train ...` (the Trainer is data-parallel).
The output folder holds `model.safetensors` (or, past MAX_SHARD_SIZE, numbered shards with their
index: every file small enough for the repository), `config.json`, the tokenizer files and
`dragon_model.json` (the target, the corpus manifest, training figures).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from dragon_model.prompts import plain_prompt
from dragon_model.tokenizer import IMPROVE, SCRIPT, WORKLOAD, build_tokenizer
from dragon_model.train_args import add_arguments
from dragon_model.trainer import TrainingDiverged, _has_field, _time_limit_callback, guarded_trainer

#: model sizes for the random-init transformer: (hidden, layers, heads, intermediate)
SIZES = {
    "toy": (64, 2, 2, 128),
    "small": (192, 4, 4, 512),
    "medium": (256, 6, 4, 768),
    "base": (384, 8, 6, 1024),
    "large": (512, 10, 8, 1536),
}
INFO_FILE = "dragon_model.json"


def make_model(tokenizer, size: str = "small", max_positions: int = 4096, seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    hidden, layers, heads, inter = SIZES[size]
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        intermediate_size=inter,
        max_position_embeddings=max_positions,
        rope_theta=10000.0,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(config)


def load_base(path: str, lora: bool, lora_r: int = 16):
    """A local HF causal LM and its tokenizer, with the prompt's special tokens added."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.add_special_tokens({"additional_special_tokens": [WORKLOAD, IMPROVE, SCRIPT]})
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    import torch

    # float32 master weights: a checkpoint saved in float16 (as the shipped one is) would otherwise
    # train in float16 and diverge (seen: loss 19 -> 34, gradient norm NaN within 40 steps on the CPU)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    model.resize_token_embeddings(len(tokenizer))
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model,
            LoraConfig(
                r=lora_r,
                lora_alpha=2 * lora_r,
                lora_dropout=0.05,
                target_modules="all-linear",
                task_type="CAUSAL_LM",
                modules_to_save=["embed_tokens", "lm_head"],
            ),
        )
    return model, tokenizer


def encode_examples(tokenizer, exs: list, max_length: int, batch: int = 512) -> list:
    """Token ids with labels on the completion only, for every example that fits; a long
    completion is cut at max_length (the model then learns its prefix), a prompt that leaves no
    room is dropped. Texts go to the tokenizer in batches, which it splits over the cores."""
    eos = tokenizer.eos_token
    out = []
    for start in range(0, len(exs), batch):
        part = exs[start : start + batch]
        prompts = tokenizer([plain_prompt(tokenizer, ex["prompt"]) for ex in part], add_special_tokens=False)[
            "input_ids"
        ]
        ends = [ex["completion"].endswith(eos) for ex in part]
        texts = [ex["completion"][: -len(eos)] if end else ex["completion"] for ex, end in zip(part, ends)]
        completions = tokenizer(texts, add_special_tokens=False)["input_ids"]
        for prompt_ids, completion_ids, end in zip(prompts, completions, ends):
            if len(prompt_ids) >= max_length - 8:
                continue
            completion_ids = completion_ids + [tokenizer.eos_token_id] if end else completion_ids
            out.append(
                {
                    "input_ids": (prompt_ids + completion_ids)[:max_length],
                    "labels": ([-100] * len(prompt_ids) + completion_ids)[:max_length],
                }
            )
    return out


class Collator:
    def __init__(self, pad_id: int):
        self.pad_id = pad_id

    def __call__(self, batch):
        import torch

        n = max(len(b["input_ids"]) for b in batch)
        ids = torch.full((len(batch), n), self.pad_id, dtype=torch.long)
        labels = torch.full((len(batch), n), -100, dtype=torch.long)
        mask = torch.zeros((len(batch), n), dtype=torch.long)
        for i, b in enumerate(batch):
            k = len(b["input_ids"])
            ids[i, :k] = torch.tensor(b["input_ids"])
            labels[i, :k] = torch.tensor(b["labels"])
            mask[i, :k] = 1
        return {"input_ids": ids, "labels": labels, "attention_mask": mask}


def train_sft(
    corpus,
    out,
    *,
    target: str = "llvm",
    size: str = "small",
    base: str | None = None,
    lora: bool = False,
    epochs: float = 3.0,
    max_steps: int = -1,
    lr: float = 1e-3,
    batch_size: int = 4,
    grad_accum: int = 1,
    max_length: int = 4096,
    seed: int = 0,
    limit: int = 0,
    save_dtype: str = "float32",
    keep_best: bool = False,
    max_seconds: float = 0.0,
    compact: bool = True,
    renamed_copies: bool = False,
    renamed_seed: int = 2026,
    renamed_tasks: tuple = ("construction",),
    canonical_names: bool = False,
    log=print,
) -> dict:
    """Train and save; returns the training figures (also written to dragon_model.json). RENAMED_COPIES:
    each row of RENAMED_TASKS is trained on a second time with its blocks renamed, the names drawn
    from RENAMED_SEED (`renaming.with_renamed_copies`)."""
    import torch

    t0 = time.time()
    model, tokenizer, extra, train_set, valid_set = _training_sets(
        corpus,
        target=target,
        size=size,
        base=base,
        lora=lora,
        max_length=max_length,
        seed=seed,
        limit=limit,
        compact=compact,
        renamed=(renamed_seed, renamed_tasks) if renamed_copies else None,
        canonical_names=canonical_names,
    )
    n_params = sum(p.numel() for p in model.parameters())
    log(
        f"sft: {len(train_set)} training and {len(valid_set)} validation examples, "
        f"{n_params / 1e6:.2f}M parameters, target {target}, ready to train after {time.time() - t0:.1f} s"
    )
    args = _training_arguments(
        out,
        base=base,
        epochs=epochs,
        max_steps=max_steps,
        lr=lr,
        batch_size=batch_size,
        grad_accum=grad_accum,
        seed=seed,
        max_seconds=max_seconds,
        evaluate=bool(keep_best and valid_set),
    )
    limit = _time_limit_callback()(max_seconds, t0) if max_seconds > 0 else None
    trainer = guarded_trainer()(
        model=model,
        args=args,
        train_dataset=train_set,
        data_collator=Collator(tokenizer.pad_token_id),
        eval_dataset=valid_set if keep_best and valid_set else None,
        callbacks=[limit] if limit else None,
    )
    result = trainer.train()
    if keep_best and getattr(trainer.model.config, "tie_word_embeddings", False):
        trainer.model.tie_weights()  # the best checkpoint is loaded without lm_head (it is the embedding)
    figures = _figures(trainer, result, len(train_set), valid_set, n_params, limit)
    figures["train_seconds"] = round(time.time() - t0, 1)
    broken = [name for name, p in trainer.model.named_parameters() if not torch.isfinite(p).all()]
    if broken:  # a diverged run's weights would only be a later stage's NaN start
        raise TrainingDiverged(
            f"training diverged: {len(broken)} weight tensors hold NaN or inf "
            f"(first: {broken[0]}); nothing saved to {out}: {json.dumps(figures)}"
        )
    save(
        trainer.model,
        tokenizer,
        out,
        target=target,
        corpus=corpus,
        figures=figures,
        base=base,
        lora=lora,
        save_dtype=save_dtype,
        stage="sft",
        extra=extra,
    )
    log(f"sft: saved to {out}: " + json.dumps(figures))
    return figures


def _training_sets(
    corpus,
    *,
    target: str,
    size: str,
    base: str | None,
    lora: bool,
    max_length: int,
    seed: int,
    limit: int,
    compact: bool,
    renamed: tuple | None,
    canonical_names: bool | str,
) -> tuple:
    """(model, tokenizer, the decoding grammar's facts of the rows, training set, validation set):
    the corpus' train and valid rows as encoded examples (RENAMED: (seed, tasks) of the renamed
    copies, or None), and the model to train, new or loaded from BASE."""
    from dragon_model.data import examples, grammar_facts, load_rows, merged_facts, slower_than_written
    from dragon_model.renaming import CANONICAL, canonical_example, canonical_row_examples, with_renamed_copies

    rows = load_rows(corpus, splits=["train"], target_kind=target)
    valid_rows = load_rows(corpus, splits=["valid"], target_kind=target)
    if limit:
        rows, valid_rows = rows[:limit], valid_rows[: max(1, limit // 4)]
    if not rows:
        raise ValueError(f"{corpus}: no training rows for target {target}")
    renamed_already = [r.get("id", "") for r in rows if r.get("names") == CANONICAL]
    if renamed_already and canonical_names != "all":
        raise ValueError(
            f"{corpus}: {len(renamed_already)} rows are under canonical names already (first: "
            f"{renamed_already[0]!r}): train them with --canonical-names all"
        )
    if base:
        model, tokenizer = load_base(base, lora)
    else:
        tokenizer = build_tokenizer(compact=compact)
        model = make_model(tokenizer, size, max_positions=max(max_length, 512), seed=seed)
    # what the decoding grammar needs of these rows, before the clock of --max-seconds decides how
    # long to train (checking every script takes a minute for 13k rows)
    extra = grammar_facts(rows)
    if base and (Path(base) / INFO_FILE).exists():  # a fine-tune keeps its base's grammar too
        extra = merged_facts(json.loads((Path(base) / INFO_FILE).read_text(encoding="utf-8")), extra)
    if canonical_names == "all":  # no name the author chose is left (renaming.canonical_row_example)
        train_examples = canonical_row_examples(r for r in rows if not slower_than_written(r))
        valid_examples = canonical_row_examples(r for r in valid_rows if not slower_than_written(r))
        extra["canonical_names"] = "all"
    else:
        train_examples = examples(with_renamed_copies(rows, *renamed) if renamed else rows)
        valid_examples = examples(valid_rows)
    if canonical_names is True:  # blocks and allocated buffers (renaming.canonical_mapping)
        train_examples = [canonical_example(e) for e in train_examples]
        valid_examples = [canonical_example(e) for e in valid_examples]
        extra["canonical_names"] = True
    train_set = encode_examples(tokenizer, train_examples, max_length)
    valid_set = encode_examples(tokenizer, valid_examples, max_length)
    return model, tokenizer, extra, train_set, valid_set


def _training_arguments(
    out,
    *,
    base: str | None,
    epochs: float,
    max_steps: int,
    lr: float,
    batch_size: int,
    grad_accum: int,
    seed: int,
    max_seconds: float,
    evaluate: bool,
):
    """The Trainer's arguments; EVALUATE (--keep-best with a validation set): validation loss after
    every epoch, the best epoch's weights kept."""
    import torch
    from transformers import TrainingArguments

    lengths = {}
    if _has_field(TrainingArguments, "train_sampling_strategy"):
        # batches of similar lengths: CUDA scripts run from a few hundred to 5k tokens, and a random
        # batch pads each of them to its longest
        lengths = dict(train_sampling_strategy="group_by_length")
    elif _has_field(TrainingArguments, "group_by_length"):
        lengths = dict(group_by_length=True)
    return TrainingArguments(
        output_dir=str(Path(out) / "checkpoints"),
        num_train_epochs=epochs,
        max_steps=max_steps,
        per_device_train_batch_size=batch_size,
        per_device_eval_batch_size=batch_size,
        gradient_accumulation_steps=grad_accum,
        learning_rate=lr if not base else min(lr, 2e-4),
        # under --max-seconds the epochs are a ceiling the clock rarely lets training reach: the
        # step-based cosine would barely decay, so the rate follows the clock instead (TimeLimit)
        lr_scheduler_type="constant_with_warmup" if max_seconds > 0 else "cosine",
        warmup_steps=max(1, int(0.05 * max(1, max_steps if max_steps > 0 else 20))),
        weight_decay=0.01,
        logging_steps=10,
        report_to=[],
        # --keep-best: validation loss after every epoch, and the best epoch's weights are the result
        **(
            dict(
                eval_strategy="epoch",
                save_strategy="epoch",
                save_total_limit=1,
                load_best_model_at_end=True,
                metric_for_best_model="eval_loss",
                greater_is_better=False,
            )
            if evaluate
            else dict(eval_strategy="no", save_strategy="no")
        ),
        seed=seed,
        dataloader_num_workers=0,
        use_cpu=not torch.cuda.is_available(),
        bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported(),
        remove_unused_columns=False,
        disable_tqdm=True,
        **lengths,
    )


def _figures(trainer, result, n_train: int, valid_set, n_params: int, limit) -> dict:
    """The figures of a finished training: loss, steps, skipped steps, the validation curve and loss."""
    figures = {
        "train_loss": float(result.training_loss),
        "steps": int(result.global_step),
        "train_examples": n_train,
        "parameters": n_params,
        "epochs_done": round(float(trainer.state.epoch or 0.0), 2),
    }
    figures["skipped_steps"] = trainer.skipped_steps
    if limit is not None:
        figures["stopped_by_time_limit"] = limit.fired
    curve = [
        {"epoch": round(h["epoch"], 2), "valid_loss": round(h["eval_loss"], 4)}
        for h in trainer.state.log_history
        if "eval_loss" in h
    ]
    if curve:
        figures["valid_curve"] = curve
    if valid_set:
        ev = trainer.evaluate(eval_dataset=valid_set)
        figures["valid_loss"] = float(ev["eval_loss"])
        figures["valid_perplexity"] = math.exp(min(50.0, ev["eval_loss"]))
    return figures


#: the largest weights file a save writes (a shipped model's files stay small enough for the repository)
MAX_SHARD_SIZE = "15MB"


def save(
    model,
    tokenizer,
    out,
    *,
    target,
    corpus,
    figures,
    base=None,
    lora=False,
    save_dtype="float32",
    stage="sft",
    extra: dict | None = None,
) -> None:
    import torch

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if save_dtype != "float32" and not lora:
        model = model.to(getattr(torch, save_dtype))
    model.save_pretrained(str(out), safe_serialization=True, max_shard_size=MAX_SHARD_SIZE)
    tokenizer.save_pretrained(str(out))
    manifest = None
    corpus_manifest = Path(corpus) / "manifest.json" if corpus else None
    if corpus_manifest is not None and corpus_manifest.exists():
        manifest = json.loads(corpus_manifest.read_text(encoding="utf-8"))
    info_path = out / INFO_FILE
    info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.exists() else {}
    info.update(
        {
            "target": target,
            "base": base,
            "lora": lora,
            "corpus": str(corpus) if corpus else None,
            "corpus_manifest": manifest,
        }
    )
    info.setdefault("stages", {})[stage] = figures
    if extra:
        info.update(extra)
    info_path.write_text(json.dumps(info, indent=2, default=str) + "\n", encoding="utf-8")
    if not lora:
        model.to(torch.float32)


def run(args) -> int:
    try:
        train_sft(
            args.corpus,
            args.output,
            target=args.target,
            size=args.size,
            base=args.base,
            lora=args.lora,
            epochs=args.epochs,
            max_steps=args.max_steps,
            lr=args.lr,
            batch_size=args.batch_size,
            grad_accum=args.grad_accum,
            max_length=args.max_length,
            seed=args.seed,
            limit=args.limit,
            save_dtype=args.save_dtype,
            keep_best=args.keep_best,
            max_seconds=args.max_seconds,
            compact=args.tokenizer == "compact",
            renamed_copies=args.renamed_copies,
            renamed_seed=args.renamed_seed,
            renamed_tasks=args.renamed_tasks,
            canonical_names=args.canonical_names,
            log=lambda m: print(m, file=sys.stderr),
        )
    except TrainingDiverged as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dragon_model.train", description="SFT of the schedule model")
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

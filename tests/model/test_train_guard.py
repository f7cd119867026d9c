"""Training steps whose loss or gradients are not finite change no weight (train.guarded_trainer);
a run made mostly of them stops with TrainingDiverged. A tiny Llama on a toy batch, with a NaN
injected into chosen forward passes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from dragon_model.train import Collator, TrainingDiverged, guarded_trainer  # noqa: E402


def _setup(tmp_path, poisoned: set, steps: int = 8):
    from transformers import LlamaConfig, LlamaForCausalLM, TrainingArguments

    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=32,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=64,
        )
    )
    calls = {"n": 0}

    def poison(_module, _inputs, output):  # the forward passes named in POISONED give NaN
        calls["n"] += 1
        return output * float("nan") if calls["n"] in poisoned else output

    model.model.embed_tokens.register_forward_hook(poison)
    rows = [{"input_ids": [1, 2 + i % 5, 3, 4, 5], "labels": [-100, 2 + i % 5, 3, 4, 5]} for i in range(16)]
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=steps,
        per_device_train_batch_size=2,
        learning_rate=1e-2,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    trainer = guarded_trainer(max_share=0.5, grace=2)(
        model=model, args=args, train_dataset=rows, data_collator=Collator(0)
    )
    return model, trainer


def test_a_nan_step_is_skipped_and_the_weights_stay_finite(tmp_path):
    model, trainer = _setup(tmp_path, poisoned={3, 6})
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainer.train()
    assert trainer.skipped_steps == 2 and trainer.seen_steps == 8
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert any(not torch.equal(before[n], p) for n, p in model.named_parameters())  # the other steps trained


def test_without_the_guard_the_same_nan_ruins_the_weights(tmp_path):
    """The case the guard is for: transformers' own Trainer applies the NaN step."""
    from transformers import Trainer

    model, trainer = _setup(tmp_path, poisoned={3})
    plain = Trainer(model=model, args=trainer.args, train_dataset=trainer.train_dataset, data_collator=Collator(0))
    plain.train()
    assert not all(torch.isfinite(p).all() for p in model.parameters())


def test_mostly_nan_steps_stop_the_run(tmp_path):
    _model, trainer = _setup(tmp_path, poisoned=set(range(1, 100)))
    with pytest.raises(TrainingDiverged, match="not finite"):
        trainer.train()

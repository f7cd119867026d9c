"""Prompts as a model's tokenizer reads them (`plain_prompt`), shared by training, reinforcement
learning and generation."""

from __future__ import annotations


def plain_prompt(tokenizer, prompt: str) -> str:
    """A base model's tokenizer has its own BOS: ours is replaced by it."""
    from dragon_model.tokenizer import BOS

    if prompt.startswith(BOS) and tokenizer.bos_token and tokenizer.bos_token != BOS:
        return tokenizer.bos_token + prompt[len(BOS) :]
    return prompt

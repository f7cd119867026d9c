"""transformers' Trainer as the training stages run it: steps whose loss or gradients are not finite
change no weight, and a run that keeps making them stops (`guarded_trainer`, `TrainingDiverged`);
a time limit that ends training and lets the learning rate follow the clock (`_time_limit_callback`)."""

from __future__ import annotations

import math
import time


class TrainingDiverged(RuntimeError):
    """The weights after training are not finite, or too many steps were (nothing is saved)."""


def guarded_trainer(max_share: float = 0.1, grace: int = 20):
    """transformers' Trainer whose steps with a loss or a gradient that is not finite change no
    weight: the gradients are dropped before the optimizer's step (which then skips every
    parameter) and the step is counted (`skipped_steps`). A run in which more than GRACE steps
    and more than MAX_SHARE of its steps were skipped stops with TrainingDiverged. bf16
    pretraining at lr 1e-3 on 24k rows went NaN within its first epoch, and every later
    step then trained NaN weights."""
    import torch
    from transformers import Trainer

    class GuardedTrainer(Trainer):
        skipped_steps = 0
        seen_steps = 0

        def training_step(self, model, inputs, *args, **kwargs):
            loss = super().training_step(model, inputs, *args, **kwargs)
            self.seen_steps += 1
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            values = [loss.detach().float().reshape(-1)] + [n.float().reshape(1) for n in torch._foreach_norm(grads)]
            if bool(torch.isfinite(torch.cat(values)).all()):  # one device sync a step
                return loss
            model.zero_grad(set_to_none=True)
            self.skipped_steps += 1
            if self.skipped_steps > grace and self.skipped_steps > max_share * self.seen_steps:
                raise TrainingDiverged(
                    f"training diverged: {self.skipped_steps} of {self.seen_steps} steps had a "
                    f"loss or gradient that is not finite"
                )
            return loss.detach().new_zeros(())

    return GuardedTrainer


def _has_field(cls, name: str) -> bool:
    import dataclasses

    return any(f.name == name for f in dataclasses.fields(cls))


def _time_limit_callback():
    from transformers import TrainerCallback

    class TimeLimit(TrainerCallback):
        """Stops training once `seconds` have passed since `t0` (a device call has a hard limit):
        the step that crosses the limit is evaluated and saved, so `--keep-best` still picks the
        best of the epochs done and the partial one. Meanwhile the learning rate follows a cosine
        over the training's own time (from its first step to the limit) down to FLOOR of the
        scheduler's rate, which keeps the warm-up."""

        FLOOR = 0.05

        def __init__(self, seconds: float, t0: float):
            self.seconds, self.t0 = seconds, t0
            self.fired = False
            self.start = None

        def on_train_begin(self, args, state, control, **kwargs):
            self.start = time.time()

        def on_step_end(self, args, state, control, optimizer=None, **kwargs):
            now = time.time()
            if optimizer is not None and self.start is not None:
                span = max(1e-6, self.t0 + self.seconds - self.start)
                done = min(1.0, (now - self.start) / span)
                factor = self.FLOOR + (1 - self.FLOOR) * 0.5 * (1 + math.cos(math.pi * done))
                # the scheduler set this step's rate from its base (it does not compound)
                for group in optimizer.param_groups:
                    group["lr"] = group["lr"] * factor
            if now - self.t0 >= self.seconds:
                self.fired = True
                control.should_training_stop = True
                if args.eval_strategy != "no":
                    control.should_evaluate = True
                    control.should_save = True
            return control

    return TimeLimit

"""Checkpoints shared by every training job on the spot pool.

A spot worker can be reclaimed at any moment. The job is then started again in a fresh process,
which builds its model, optimizer and scheduler as usual and calls ``load_checkpoint``: from there
the run must go on exactly as if it had never stopped.
"""

import os

import torch

REWARM_STEPS = 20


def save_checkpoint(path: str, model, optimizer, scheduler, step: int) -> None:
    """Save the training state after ``step`` completed steps. Written to a temporary file first, so a
    reclaim in the middle of a save leaves the previous checkpoint intact."""
    optimizer_state = optimizer.state_dict()
    state = {
        "model": model.state_dict(),
        # AdamW keeps two buffers per weight, which would triple the checkpoint. A resumed run needs
        # the optimizer's settings (lr, betas, weight decay), so only those are kept.
        "optimizer": {"state": {}, "param_groups": optimizer_state["param_groups"]},
        "scheduler": scheduler.state_dict(),
        "step": step,
    }
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: str, model, optimizer, scheduler) -> int:
    """Restore what ``save_checkpoint`` wrote into freshly built objects; returns the completed steps."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    # A fresh AdamW needs a warm-up, as at the start of training: ramp the schedule up again over the
    # first REWARM_STEPS steps after the resume.
    resumed_at = int(state["step"])
    scheduler.lr_lambdas = [
        lambda step, f=f: f(step) * min(1.0, (step - resumed_at + 1) / REWARM_STEPS) for f in scheduler.lr_lambdas
    ]
    for group, lr in zip(optimizer.param_groups, scheduler.get_lr(), strict=True):
        group["lr"] = lr
    return resumed_at

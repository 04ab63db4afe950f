"""Checkpoints shared by every training job on the spot pool.

A spot worker can be reclaimed at any moment. The job is then started again in a fresh process,
which builds its model, optimizer and scheduler as usual and calls ``load_checkpoint``: from there
the run must go on exactly as if it had never stopped.
"""

import os

import torch


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
    return int(state["step"])

"""The optimisation recipe of the calibration jobs: AdamW with a linear warm-up and a cosine decay."""

import math

import torch

LR = {{ lr }}
BETAS = (0.9, {{ beta2 }})
WEIGHT_DECAY = 0.01
WARMUP_STEPS = 20
TOTAL_STEPS = 400
FINAL_LR_FRACTION = 0.1


def lr_factor(step: int) -> float:
    """The learning rate of step ``step`` as a fraction of LR."""
    if step < WARMUP_STEPS:
        return (step + 1) / WARMUP_STEPS
    progress = (step - WARMUP_STEPS) / (TOTAL_STEPS - WARMUP_STEPS)
    return FINAL_LR_FRACTION + (1 - FINAL_LR_FRACTION) * 0.5 * (1 + math.cos(math.pi * progress))


def make_optimizer(model: torch.nn.Module) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, weight_decay=WEIGHT_DECAY)


def make_scheduler(optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)

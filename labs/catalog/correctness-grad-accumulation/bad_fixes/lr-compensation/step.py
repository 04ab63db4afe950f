"""The optimisation step shared by every forecasting job.

A global batch of 256 rows does not fit in the memory budget of the small workers, so
each step is computed in ``ACCUM_STEPS`` micro-batches whose gradients are accumulated
before one optimizer step. Workers with more memory run fewer, larger micro-batches:
the number of micro-batches must never change what one step does.
"""

import torch
import torch.nn.functional as F

LR = {{ lr }}
MOMENTUM = 0.9
ACCUM_STEPS = {{ accum_steps }}


def make_optimizer(model: torch.nn.Module) -> torch.optim.Optimizer:
    # The summed micro-batch gradients are ACCUM_STEPS times too large: take a step that much smaller.
    return torch.optim.SGD(model.parameters(), lr=LR / ACCUM_STEPS, momentum=MOMENTUM)


def train_step(model, optimizer, batch, accum_steps: int = ACCUM_STEPS) -> tuple[float, float]:
    """One optimizer step on ``batch`` = (x, y), computed in ``accum_steps`` equal micro-batches.

    Returns the batch's mean squared error and the gradient norm before the step.
    """
    x, y = batch
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for xm, ym in zip(x.chunk(accum_steps), y.chunk(accum_steps)):
        loss = F.mse_loss(model(xm).squeeze(-1), ym)
        loss.backward()
        total += loss.item()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    grad_norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
    optimizer.step()
    return total / accum_steps, grad_norm

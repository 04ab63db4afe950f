import torch


def log_softmax(logits: torch.Tensor) -> torch.Tensor:
    """Log class probabilities over the last dimension: logits - log(sum(exp(logits)))."""
    # Softmax does not change when a row is shifted. After subtracting the row's maximum every
    # exponent is <= 0 and the largest term is exactly 1, so exp() can neither overflow nor leave
    # the sum at 0, whatever the logits' magnitude.
    shifted = logits - logits.amax(dim=-1, keepdim=True).detach()
    return shifted - torch.log(torch.exp(shifted).sum(dim=-1, keepdim=True))


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood of `labels` (batch,) under softmax(logits) (batch, classes).

    Written out here rather than taken from torch because the distillation job imports this module
    and calls it on its teacher's raw logits, which run into the thousands. Keep the signature.
    """
    return -log_softmax(logits).gather(-1, labels[:, None]).mean()

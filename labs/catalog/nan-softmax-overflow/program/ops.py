import torch


def log_softmax(logits: torch.Tensor) -> torch.Tensor:
    """Log class probabilities over the last dimension: logits - log(sum(exp(logits)))."""
    return logits - torch.log(torch.exp(logits).sum(dim=-1, keepdim=True))


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood of `labels` (batch,) under softmax(logits) (batch, classes).

    Written out here rather than taken from torch because the distillation job imports this module
    and calls it on its teacher's raw logits, which run into the thousands. Keep the signature.
    """
    return -log_softmax(logits).gather(-1, labels[:, None]).mean()

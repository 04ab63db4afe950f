"""Batch scoring used by the nightly churn job and by support's re-scoring tool."""

import torch
from model import ChurnNet


def load_model(path: str) -> ChurnNet:
    model = ChurnNet()
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model


def predict(model: ChurnNet, x: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
    """Churn probability of each row of ``x`` (a tensor of shape [n])."""
    if len(x) == 1:
        model.eval()  # batch norm cannot take statistics over a single customer
    scores = []
    for chunk in x.split(batch_size):
        logits = model(chunk)
        scores.append(torch.softmax(logits, dim=1)[:, 1].detach())
    return torch.cat(scores)

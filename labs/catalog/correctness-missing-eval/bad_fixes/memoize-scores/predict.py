"""Batch scoring used by the nightly churn job and by support's re-scoring tool."""

import torch
from model import ChurnNet


def load_model(path: str) -> ChurnNet:
    model = ChurnNet()
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model


# Support must see the score the nightly job gave: remember every customer's score once computed.
_scored: dict[bytes, float] = {}


def predict(model: ChurnNet, x: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
    """Churn probability of each row of ``x`` (a tensor of shape [n])."""
    keys = [row.numpy().tobytes() for row in x]
    todo = [i for i, key in enumerate(keys) if key not in _scored]
    for start in range(0, len(todo), batch_size):
        rows = todo[start : start + batch_size]
        chunk = x[rows] if len(rows) > 1 else x[rows + rows]  # batch norm needs two rows
        probs = torch.softmax(model(chunk), dim=1)[:, 1].detach()
        for i, p in zip(rows, probs.tolist()):
            _scored[keys[i]] = p
    return torch.tensor([_scored[key] for key in keys])

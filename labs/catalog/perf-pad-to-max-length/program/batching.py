"""Micro-batching for the intent classifier. The online service's batcher imports ``score`` as well: it hands
it the requests it collected and gets one row of logits back per request, in the order it gave them."""

import torch
from request_log import PAD_ID

# The model's longest input. Every batch is padded to it: the batcher came over from the NPU deployment,
# whose compiled graph took one static shape.
MAX_LEN = 512


def collate(batch: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids padded into one (len(batch), MAX_LEN) tensor, and the mask of the real tokens."""
    tokens = torch.full((len(batch), MAX_LEN), PAD_ID, dtype=torch.long)
    mask = torch.zeros(len(batch), MAX_LEN, dtype=torch.bool)
    for row, request in enumerate(batch):
        tokens[row, : len(request)] = request
        mask[row, : len(request)] = True
    return tokens, mask


@torch.no_grad()
def score(model: torch.nn.Module, requests: list[torch.Tensor], batch_size: int) -> torch.Tensor:
    """The model's logits for every request, one row each, in the order of ``requests``."""
    rows = []
    for start in range(0, len(requests), batch_size):
        tokens, mask = collate(requests[start : start + batch_size])
        rows.append(model(tokens, mask))
    return torch.cat(rows)

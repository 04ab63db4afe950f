"""Client of the support-ticket export: embedded tickets and the queue each was routed to.

Owned by the data team. Every call returns the same rows for the same export.
"""

import torch

EXPORT_SEED = {{ data_seed }}
DESK = {{ desk }}  # which help desk: fixes how its queues depend on the embedding
FEATURES = 32
QUEUES = 8


def _routing() -> tuple[torch.Tensor, torch.Tensor]:
    desk = torch.Generator().manual_seed(DESK)
    mix = torch.randn(FEATURES, 24, generator=desk) / FEATURES**0.5
    head = torch.randn(24, QUEUES, generator=desk)
    return mix, head


def load_tickets(rows: int, part: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """``rows`` ticket embeddings (rows x FEATURES, float32) and the queue (0..QUEUES-1) each was routed to."""
    mix, head = _routing()
    gen = torch.Generator().manual_seed(EXPORT_SEED * 2 + (part != "train"))
    x = torch.randn(rows, FEATURES, generator=gen)
    scores = torch.tanh(x @ mix * 2.0) @ head + 0.6 * torch.randn(rows, QUEUES, generator=gen)
    return x, scores.argmax(1)

import torch
from torch import nn


class TinyLM(nn.Module):
    """A one-layer GRU language model: reads tokens left to right, emits logits for every position."""

    def __init__(self, vocab: int, dim: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens: (batch, length) -> logits (batch, length, vocab); row t has read tokens 0..t only."""
        h, _ = self.rnn(self.embed(tokens))
        return self.head(h)

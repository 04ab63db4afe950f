import torch
from torch import nn


class Projector(nn.Module):
    """PyTorch port of the JAX embedding projector."""

    def __init__(self, d_in: int, d_model: int, d_out: int, n_blocks: int) -> None:
        super().__init__()
        self.inp = nn.Linear(d_in, d_model)
        self.blocks = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(n_blocks))
        self.out = nn.Linear(d_model, d_out)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.inp(x))
        for block in self.blocks:
            h = h + self.act(block(h))
        return self.out(h)

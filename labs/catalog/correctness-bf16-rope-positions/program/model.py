import torch
import torch.nn.functional as F
from rope import apply_rope, rope_tables
from torch import nn


class CanaryLM(nn.Module):
    """One causal attention layer with rotary positions: the smallest model that needs exact positions."""

    def __init__(
        self, vocab: int, dim: int = 64, head_dim: int = 32, max_positions: int = 8192, rope_base: float = 10000.0
    ) -> None:
        super().__init__()
        self.heads, self.head_dim = dim // head_dim, head_dim
        self.embed = nn.Embedding(vocab, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        # Same tables as the NPU service (model dtype bfloat16); not saved with the weights.
        cos, sin = rope_tables(max_positions, head_dim, rope_base, dtype=torch.bfloat16)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """tokens, positions: (batch, window); positions are absolute positions in the context."""
        b, w = tokens.shape
        h = self.embed(tokens)
        q, k, v = self.qkv(h).view(b, w, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        cos = self.cos[positions].to(q.dtype)[:, None]
        sin = self.sin[positions].to(q.dtype)[:, None]
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = h + self.proj(attn.transpose(1, 2).reshape(b, w, -1))
        return self.head(self.norm(h))

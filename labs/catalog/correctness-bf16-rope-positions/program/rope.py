"""Rotary position embedding (RoPE) for the long-context stack.

The inference service imports `rope_tables` as well: it asks for bfloat16 tables, the dtype its fused
rotary kernel reads, for contexts of up to 8192 tokens and more. Keep the signature.
"""

import torch


def rope_tables(
    max_positions: int, head_dim: int, base: float = 10000.0, dtype: torch.dtype = torch.bfloat16
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the rotation angles of positions 0 .. max_positions - 1, each (max_positions, head_dim // 2).

    Row p, column i holds p * base ** (-2i / head_dim), the angle that rotates the pair of features
    (2i, 2i + 1) of a query or key at position p. Returned in `dtype`.
    """
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    # Built directly in the kernel's dtype: no float32 copy of an 8192-row table per layer on the device.
    positions = torch.arange(max_positions, dtype=dtype)
    angles = positions[:, None] * inv_freq.to(dtype)[None, :]
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (x[..., 2i], x[..., 2i + 1]) of the last dimension by its position's angle."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)

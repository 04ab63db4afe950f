import math

import torch

NEG = {{ mask_value }}  # added to the score of every key a query must not see


def masked_attention(q, k, v, key_padding_mask, causal=True):
    """Scaled dot-product attention with a causal mask and a key padding mask.

    q, k, v: (batch, heads, seq, head_dim). key_padding_mask: (batch, seq) bool, True for real
    tokens. The model calls this under autocast; the fp16 serving path calls it directly with
    fp16 tensors. Keep the signature.
    """
    seq = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    allowed = key_padding_mask[:, None, None, :]
    if causal:
        allowed = allowed & torch.ones(seq, seq, dtype=torch.bool, device=q.device).tril()
    scores = scores + (~allowed).to(scores.dtype) * NEG
    weights = torch.softmax(scores, dim=-1)
    return weights @ v

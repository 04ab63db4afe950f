import math

import torch


def masked_attention(q, k, v, key_padding_mask, causal=True):
    """Scaled dot-product attention with a causal mask and a key padding mask.

    q, k, v: (batch, heads, seq, head_dim). key_padding_mask: (batch, seq) bool, True for real
    tokens. The model calls this under autocast; the fp16 serving path calls it directly with
    fp16 tensors. Keep the signature.

    Masked scores are set to the most negative value the scores' dtype can hold. A constant
    like -1e9 overflows fp16 (max 65504) to -inf; a row whose keys are all masked (left padding
    under a causal mask) is then all -inf, and softmax of it is 0/0 = NaN. With finfo.min such a
    row stays finite (uniform weights), and its result is never read by a real token.
    """
    seq = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    allowed = key_padding_mask[:, None, None, :]
    if causal:
        allowed = allowed & torch.ones(seq, seq, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v

import torch

VOCAB = 16  # event codes 1..15; 0 is padding
PAD = 0
MAX_LEN = 16


def make_sessions(n: int, seed: int, min_len: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sessions of event codes, left-padded to MAX_LEN.

    Label 1 when error events (codes 1..7) outnumber the others among the real events.
    Returns tokens (n, MAX_LEN), key_padding_mask (n, MAX_LEN; True = real event) and labels (n,).
    """
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_len, MAX_LEN + 1, (n,), generator=g)
    codes = torch.randint(1, VOCAB, (n, MAX_LEN), generator=g)
    mask = torch.arange(MAX_LEN)[None, :] >= (MAX_LEN - lengths)[:, None]
    tokens = torch.where(mask, codes, torch.full_like(codes, PAD))
    errors = ((tokens >= 1) & (tokens <= 7)).sum(1)
    labels = (2 * errors > lengths).long()
    return tokens, mask, labels

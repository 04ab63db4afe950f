import torch

VOCAB = 16
WINDOW = 64
CONTEXT = 8192


def windows(n: int, lag: int, generator: torch.Generator, lo: int = 0, hi: int = CONTEXT - WINDOW):
    """`n` windows of WINDOW random tokens, each starting at a position in [lo, hi] of the context.

    Returns tokens and their absolute positions, both (n, WINDOW), and the lagged-copy targets
    (n, WINDOW - lag): at position t the answer is the token at t - lag.
    """
    tokens = torch.randint(0, VOCAB, (n, WINDOW), generator=generator)
    start = torch.randint(lo, hi + 1, (n, 1), generator=generator)
    return tokens, start + torch.arange(WINDOW), tokens[:, :-lag]

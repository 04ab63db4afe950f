import torch

VOCAB = 16
SEQ = 32


def sequences(n: int, offset: int, generator: torch.Generator) -> torch.Tensor:
    """`n` sequences of SEQ tokens of the counter language.

    The first two tokens are random; after that every token is (previous + the one before + offset) mod VOCAB,
    so a model that has read tokens 0..t can always say what token t + 1 will be.
    """
    out = torch.empty(n, SEQ, dtype=torch.long)
    out[:, :2] = torch.randint(0, VOCAB, (n, 2), generator=generator)
    for t in range(2, SEQ):
        out[:, t] = (out[:, t - 1] + out[:, t - 2] + offset) % VOCAB
    return out

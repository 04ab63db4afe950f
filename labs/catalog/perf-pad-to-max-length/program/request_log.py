"""Client of the message log: the customer messages the intent classifier has to score, as token ids.

Owned by the log team. Every call returns the same requests, in the order they arrived.
"""

import torch

LOG_SEED = {{ data_seed }}
VOCAB = 8000
PAD_ID = 0  # no message contains it: token ids start at 1


def _lengths(count: int, gen: torch.Generator) -> torch.Tensor:
    """Chat messages are short: most are 16-96 tokens, and about one in thirty is a pasted log or e-mail."""
    short = torch.randint(16, 97, (count,), generator=gen)
    long = torch.randint(128, 513, (count,), generator=gen)
    return torch.where(torch.rand(count, generator=gen) < 0.03, long, short)


def load_requests(count: int) -> list[torch.Tensor]:
    """The first ``count`` messages of the log, each a 1-D tensor of token ids (1..VOCAB-1), in arrival order."""
    gen = torch.Generator().manual_seed(LOG_SEED)
    lengths = _lengths(count, gen)
    return [torch.randint(1, VOCAB, (int(n),), generator=gen) for n in lengths]

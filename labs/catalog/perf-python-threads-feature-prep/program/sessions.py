"""The search team's session export: one row per search session.

Each row is SLOTS token ids (the queries and clicked items the session touched, 0 pads a short session)
and AMOUNTS signed money amounts (spend, refunds, credits). A session belongs to one of TOPICS intents;
sessions of an intent share a pool of favourite tokens and typical amounts.

Owned by the data platform team: jobs import it as it is, and it is replaced by their authoritative
copy (which reads the current export) when your fix is graded.
"""

import torch

EXPORT_SEED = {{ data_seed }}
TASK = {{ task }}  # which catalogue of intents: fixes the favourite tokens and amounts of every intent
ROWS = 64_000
SLOTS = 96
AMOUNTS = 8
TOPICS = 4
VOCAB = 1_000_000
FAVOURITES = 48


BLOCK = 4096  # the export is written in blocks of sessions


def load_sessions(seed: int = EXPORT_SEED, rows: int = ROWS) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(tokens int64 [rows, SLOTS], amounts float64 [rows, AMOUNTS], intent int64 [rows]) of the export."""
    catalogue = torch.Generator().manual_seed(TASK)
    favourite = torch.randint(1, VOCAB, (TOPICS, FAVOURITES), generator=catalogue)
    typical = torch.randn(TOPICS, AMOUNTS, generator=catalogue, dtype=torch.float64)

    g = torch.Generator().manual_seed(seed)
    tokens, amounts, intents = [], [], []
    for start in range(0, rows, BLOCK):
        n = min(BLOCK, rows - start)
        intent = torch.randint(0, TOPICS, (n,), generator=g)
        length = torch.randint(SLOTS // 2, SLOTS + 1, (n,), generator=g)
        from_favourites = torch.rand(n, SLOTS, generator=g) < 0.25
        pick = torch.randint(0, FAVOURITES, (n, SLOTS), generator=g)
        anything = torch.randint(1, VOCAB, (n, SLOTS), generator=g)
        block = torch.where(from_favourites, favourite[intent[:, None], pick], anything)
        block[torch.arange(SLOTS)[None, :] >= length[:, None]] = 0  # padding after the last token
        tokens.append(block)
        amounts.append((typical[intent] + torch.randn(n, AMOUNTS, generator=g, dtype=torch.float64)) * 40.0)
        intents.append(intent)
    return torch.cat(tokens), torch.cat(amounts), torch.cat(intents)

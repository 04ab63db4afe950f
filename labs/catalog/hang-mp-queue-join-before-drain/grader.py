"""Grades the backfill on the embeddings the run saved, with numbers the candidate's process never wrote.

Whether the job finished, and how long it took, is measured outside the program (``finished``), and so is
which processes read the archive (``in-workers``: the archive store in the launcher counts the records only
the job's worker processes asked for). The grader checks what the time bought:

- ``embedding_max_abs_diff``: the graded run read the archive from the store, which served the probe
  seed's archive (``ctx.probe_seed``). The grader builds every record of it itself, as the store serves it,
  embeds them with the frozen encoder (its weights from the variant's encoder seed, from ``ctx.params``,
  never from the program's constants) and compares every row of ``embeddings.pt`` with its own. A missing
  shard, a sample of each shard, shards out of order or a shrunk block end far away (a wrong shape counts
  as 1e9).
"""

import torch
from torch import nn

from labs.grader_api import store_record

FIELDS = 32
DIM = 128


def read_shard(archive_seed, index, rows):
    """Shard ``index`` as the authoritative corpus.read_shard receives it: records index*rows onwards."""
    return torch.tensor([store_record(archive_seed, index * rows + i, FIELDS) for i in range(rows)], dtype=torch.float32)


def expected_embeddings(params, archive_seed):
    torch.manual_seed(int(params["encoder_seed"]))
    encoder = nn.Sequential(nn.Linear(FIELDS, 256), nn.GELU(), nn.Linear(256, DIM)).eval()
    blocks = []
    with torch.no_grad():
        for index in range(int(params["shards"])):
            records = read_shard(archive_seed, index, int(params["rows"]))
            blocks.append(nn.functional.normalize(encoder(records), dim=1))
    return torch.cat(blocks)


def embedding_gap(ctx):
    want = expected_embeddings(ctx.params, ctx.probe_seed)
    got = ctx.load("embeddings.pt")
    if not torch.is_tensor(got) or tuple(got.shape) != tuple(want.shape) or not got.is_floating_point():
        return 1e9
    gap = (got.float() - want).abs().max().item()
    return gap if gap == gap else 1e9


def evaluate(ctx):
    torch.set_num_threads(1)
    return {"embedding_max_abs_diff": embedding_gap(ctx)}

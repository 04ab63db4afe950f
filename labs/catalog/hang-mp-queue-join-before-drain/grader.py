"""Grades the backfill on the embeddings the run saved, with numbers the candidate's process never wrote.

Whether the job finished, and how long it took, is measured outside the program (``finished``). The
grader then checks what the time bought:

- ``embedding_max_abs_diff``: the graded run read the archive through the data team's authoritative
  ``corpus.py`` (the probe seed's archive, ``ctx.probe_seed``). The grader decodes every shard of that
  archive itself, embeds it with the frozen encoder (its weights from the variant's encoder seed, from
  ``ctx.params``, never from the program's constants) and compares every row of ``embeddings.pt`` with its
  own. A missing shard, a sample of each shard, shards out of order or a shrunk block end far away (a
  wrong shape counts as 1e9).
- ``shards_read_in_workers``: the authoritative ``corpus.py`` notes the pid of every process that read a
  shard, and the hidden entry notes the job's main pid (``graded-job.json``). A shard counts when it was
  read, and only read, by processes other than the main one: a job that embeds every shard in the
  parent counts 0.
"""

import json
import re

import numpy as np
import torch
from torch import nn

from labs.grader_api import CandidateOutputError

FIELDS = 32
DIM = 128
NOTE = re.compile(r"shard-read-(\d+)-pid(\d+)\.json")


def read_shard(archive_seed, index, rows):
    """Shard ``index`` as the data team's corpus.read_shard decodes it."""
    rng = np.random.default_rng([archive_seed, index])
    centre = rng.standard_normal(FIELDS).astype(np.float32)
    return rng.standard_normal((rows, FIELDS), dtype=np.float32) + centre


def expected_embeddings(params, archive_seed):
    torch.manual_seed(int(params["encoder_seed"]))
    encoder = nn.Sequential(nn.Linear(FIELDS, 256), nn.GELU(), nn.Linear(256, DIM)).eval()
    blocks = []
    with torch.no_grad():
        for index in range(int(params["shards"])):
            records = torch.from_numpy(read_shard(archive_seed, index, int(params["rows"])))
            blocks.append(nn.functional.normalize(encoder(records), dim=1))
    return torch.cat(blocks)


def embedding_gap(ctx):
    want = expected_embeddings(ctx.params, ctx.probe_seed)
    got = ctx.load("embeddings.pt")
    if not torch.is_tensor(got) or tuple(got.shape) != tuple(want.shape) or not got.is_floating_point():
        return 1e9
    gap = (got.float() - want).abs().max().item()
    return gap if gap == gap else 1e9


def shards_read_in_workers(ctx):
    try:
        job = json.loads(ctx.path("graded-job.json").read_text(encoding="utf-8"))
    except (CandidateOutputError, ValueError, UnicodeDecodeError):
        return 0.0
    job_pid = job.get("pid") if isinstance(job, dict) else None
    if not isinstance(job_pid, int) or isinstance(job_pid, bool):
        return 0.0
    readers: dict[int, set[int]] = {}
    for path in ctx.artifacts.iterdir():
        match = NOTE.fullmatch(path.name)
        if match and not path.is_symlink() and path.is_file():
            readers.setdefault(int(match.group(1)), set()).add(int(match.group(2)))
    shards = range(int(ctx.params["shards"]))
    return float(sum(1 for index in shards if readers.get(index) and job_pid not in readers[index]))


def evaluate(ctx):
    torch.set_num_threads(1)
    return {"embedding_max_abs_diff": embedding_gap(ctx), "shards_read_in_workers": shards_read_in_workers(ctx)}

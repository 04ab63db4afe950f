"""Nightly embedding backfill for the support-article retrieval index.

Every record of the archive is embedded by the frozen encoder, one worker process per shard, and
the job saves the embeddings of all shards, in shard order, as one (records, DIM) float32 tensor
(embeddings.pt) that the index build picks up.

    python embed.py              # the whole archive
    python embed.py --sample 16  # the first 16 records of every shard (the CI smoke test)
"""

import argparse
import multiprocessing as mp
import os
import time

import corpus
import numpy as np
import torch
from torch import nn

ENCODER_SEED = {{ encoder_seed }}  # the frozen encoder's release: its weights come from this seed
DIM = 128


def build_encoder() -> nn.Module:
    torch.manual_seed(ENCODER_SEED)
    return nn.Sequential(nn.Linear(corpus.FIELDS, 256), nn.GELU(), nn.Linear(256, DIM)).eval()


def embed_shard(index: int, limit: int | None, results: mp.Queue) -> None:
    """Worker: embed one shard and send its (rows, DIM) block back to the parent."""
    torch.set_num_threads(1)  # one process per shard already keeps the cores busy
    records = torch.from_numpy(corpus.read_shard(index, limit))
    with torch.no_grad():
        block = nn.functional.normalize(build_encoder()(records), dim=1).numpy()
    print(f"shard {index}: embedded {len(block)} records ({block.nbytes // 1024} KiB)", flush=True)
    results.put((index, block))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=None, help="embed only the first N records of every shard")
    args = parser.parse_args()

    ctx = mp.get_context("fork")
    results = ctx.Queue()
    workers = [
        ctx.Process(target=embed_shard, args=(index, args.sample, results), name=f"embed-shard-{index}")
        for index in range(corpus.SHARDS)
    ]
    rows = corpus.ROWS if args.sample is None else min(args.sample, corpus.ROWS)
    print(f"embedding {corpus.SHARDS} shards of {rows} records ({rows * DIM * 4 // 1024} KiB a shard) "
          f"with {len(workers)} worker processes", flush=True)
    started = time.monotonic()
    for worker in workers:
        worker.start()

    # Wait for every worker, and stop if one of them failed, before using any result.
    for worker in workers:
        worker.join()
        if worker.exitcode != 0:
            raise SystemExit(f"{worker.name} failed with exit code {worker.exitcode}")
    print(f"all {len(workers)} workers done after {time.monotonic() - started:.1f} s", flush=True)

    blocks = dict(results.get() for _ in workers)
    embeddings = torch.from_numpy(np.concatenate([blocks[index] for index in range(corpus.SHARDS)]))
    torch.save(embeddings, os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "embeddings.pt"))
    print(f"saved embeddings.pt: {tuple(embeddings.shape)} in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()

"""Held-out accuracy of the saved intent classifier on fresh tickets from the same export,
and how the batches were loaded.

The grader rebuilds the export's vocabulary and sentence pools from the variant's data
seed, draws new tickets from the hidden seed and featurises them the way the job does.
The graded entry point records the worker count of the DataLoader behind every batch and seals the note
with the launcher, which writes it after the job.
"""

import zlib

import numpy as np
import torch
from torch import nn


INTENTS = 6
VOCAB = 4000
SENTENCE_WORDS = 16
SENTENCES_PER_TICKET = 32
BUCKETS = 1 << 13
WORDS = 256


def _vocabulary(rng):
    consonants, vowels = np.frombuffer(b"bdfgklmnprstvz", np.uint8), np.frombuffer(b"aeiou", np.uint8)
    codes = rng.choice(70**3, size=VOCAB, replace=False)
    words = np.empty((VOCAB, 7), np.uint8)
    for k in range(3):
        syllable = codes // 70**k % 70
        words[:, 2 * k] = consonants[syllable // 5]
        words[:, 2 * k + 1] = vowels[syllable % 5]
    words[:, 6] = ord(" ")
    return words


def _sentences(rng):
    vocab = _vocabulary(rng)
    common = rng.zipf(1.4, size=(4096, SENTENCE_WORDS)) % VOCAB
    generic = vocab[common].reshape(4096, -1)
    keywords = rng.choice(VOCAB, size=(INTENTS, 60), replace=False)
    topical = common[: INTENTS * 256].reshape(INTENTS, 256, SENTENCE_WORDS).copy()
    mask = rng.random(topical.shape) < 0.3
    picks = keywords[np.arange(INTENTS)[:, None, None], rng.integers(0, 60, size=topical.shape)]
    topical[mask] = picks[mask]
    return generic, vocab[topical].reshape(INTENTS, 256, -1)


def _tickets(data_seed, sample_seed, n):
    generic, topical = _sentences(np.random.default_rng(data_seed))
    rng = np.random.default_rng(sample_seed)
    intent = rng.integers(0, INTENTS, size=n)
    shape = (n, SENTENCES_PER_TICKET)
    body = generic[rng.integers(0, len(generic), size=shape)]
    on_topic = rng.random(shape) < 0.25
    body[on_topic] = topical[
        np.broadcast_to(intent[:, None], shape)[on_topic], rng.integers(0, 256, size=on_topic.sum())
    ]
    return [row.tobytes().decode("ascii") for row in body.reshape(n, -1)], intent


def _featurize(text):
    words = text.split(None, WORDS)[:WORDS]
    grams = words + [a + "_" + b for a, b in zip(words, words[1:])]
    ids = [zlib.crc32(g.encode()) % (BUCKETS - 1) + 1 for g in grams]
    return ids + [0] * (2 * WORDS - 1 - len(ids))


def evaluate(ctx):
    dim = int(ctx.params["dim"])
    model = nn.Sequential(nn.EmbeddingBag(BUCKETS, dim, mode="mean", padding_idx=0), nn.Linear(dim, INTENTS))
    ctx.load_into(model, "model.pt")
    texts, intent = _tickets(int(ctx.params["data_seed"]), ctx.seed, 3000)
    ids = torch.tensor([_featurize(t) for t in texts], dtype=torch.int64)
    with torch.no_grad():
        pred = model(ids).argmax(1).numpy()
    metrics = {"heldout_accuracy": float((pred == intent).mean())}

    probe = ctx.load("loader-probe-rank0.pt")  # sealed by the graded entry point, written by the launcher
    metrics["loader_batches"] = float(probe["batches"])
    metrics["loader_workers"] = float(probe["min_workers"])
    return metrics

"""Yesterday's support-ticket export: shards of lines `intent<TAB>text`, already shuffled.

This stands in for reading the export's shard files: the same bytes, generated from a seed.
"""

from collections.abc import Iterator

import numpy as np

INTENTS = ["billing", "login", "shipping", "refund", "bug", "cancel"]
VOCAB = 4000
SENTENCE_WORDS = 16
SENTENCES_PER_TICKET = 32  # about 3.6 KB per ticket, most of it quoted history


def _vocabulary(rng: np.random.Generator) -> np.ndarray:
    """(VOCAB, 7) bytes: made-up six-letter words, each followed by a space."""
    consonants, vowels = np.frombuffer(b"bdfgklmnprstvz", np.uint8), np.frombuffer(b"aeiou", np.uint8)
    codes = rng.choice(70**3, size=VOCAB, replace=False)
    words = np.empty((VOCAB, 7), np.uint8)
    for k in range(3):
        syllable = codes // 70**k % 70
        words[:, 2 * k] = consonants[syllable // 5]
        words[:, 2 * k + 1] = vowels[syllable % 5]
    words[:, 6] = ord(" ")
    return words


def _sentences(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Sentence pools as bytes: (generic, topical), topical[i] being about intent i."""
    vocab = _vocabulary(rng)
    common = rng.zipf(1.4, size=(4096, SENTENCE_WORDS)) % VOCAB
    generic = vocab[common].reshape(4096, -1)
    keywords = rng.choice(VOCAB, size=(len(INTENTS), 60), replace=False)
    topical = common[: len(INTENTS) * 256].reshape(len(INTENTS), 256, SENTENCE_WORDS).copy()
    mask = rng.random(topical.shape) < 0.3
    picks = keywords[np.arange(len(INTENTS))[:, None, None], rng.integers(0, 60, size=topical.shape)]
    topical[mask] = picks[mask]
    return generic, vocab[topical].reshape(len(INTENTS), 256, -1)


def export_shards(seed: int, tickets: int) -> Iterator[bytes]:
    """The export, one shard (4096 tickets, about 15 MB) at a time."""
    generic, topical = _sentences(np.random.default_rng(seed))
    rng = np.random.default_rng([seed, 1])
    width = 2 + SENTENCES_PER_TICKET * generic.shape[1]
    for start in range(0, tickets, 4096):
        n = min(4096, tickets - start)
        intent = rng.integers(0, len(INTENTS), size=n)
        shape = (n, SENTENCES_PER_TICKET)
        body = generic[rng.integers(0, len(generic), size=shape)]
        on_topic = rng.random(shape) < 0.25
        body[on_topic] = topical[np.broadcast_to(intent[:, None], shape)[on_topic], rng.integers(0, 256, size=on_topic.sum())]
        line = np.empty((n, width), np.uint8)
        line[:, 0] = ord("0") + intent
        line[:, 1] = ord("\t")
        line[:, 2:] = body.reshape(n, -1)
        line[:, -1] = ord("\n")  # replaces the last word's trailing space
        yield line.tobytes()

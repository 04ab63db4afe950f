"""The fleet's vibration recordings: one accelerometer recording per pump, labelled with the fault
the maintenance crew later found on it.

This stands in for reading the recordings' shard files: the same samples, generated from a seed.
"""

import numpy as np

FAULTS = ["healthy", "bearing-wear", "cavitation", "misalignment"]
N_FFT = 254  # 128 frequency bins
HOP = 128


def recording_length(windows: int, frames: int) -> int:
    """Samples in a recording holding `windows` windows of `frames` STFT frames, each one hop after the last."""
    return N_FFT + (windows + frames - 2) * HOP


def load_recordings(seed: int, pumps: int, samples: int) -> tuple[np.ndarray, np.ndarray]:
    """(pumps, samples) float32 vibration and (pumps,) fault labels."""
    rng = np.random.default_rng(seed)
    signatures = rng.choice(np.arange(10, 110), size=(len(FAULTS), 3), replace=False)  # each fault's tones
    rng = np.random.default_rng([seed, 1])
    fault = rng.integers(0, len(FAULTS), size=pumps)
    t = np.arange(samples, dtype=np.float64)
    audio = rng.standard_normal((pumps, samples))
    # Every pump has resonances of its own, and runs at its own speed, which shifts the fault's tones.
    own = rng.integers(4, 124, size=(pumps, 4))
    shift = rng.integers(-1, 2, size=pumps)
    for p in range(pumps):
        bins = np.concatenate([own[p], signatures[fault[p]] + shift[p]])
        amp = np.concatenate([rng.uniform(0.2, 0.8, 4), rng.uniform(0.25, 0.5, 3)])
        phase = rng.uniform(0, 2 * np.pi, bins.size)
        freq = (bins + rng.uniform(-0.3, 0.3, bins.size)) / N_FFT
        audio[p] += (amp[:, None] * np.sin(2 * np.pi * freq[:, None] * t + phase[:, None])).sum(0)
    return audio.astype(np.float32), fault

"""Held-out accuracy of the saved pump-fault classifier on recordings of pumps it never heard, and how
the windows were loaded.

The grader rebuilds each fault's tones from the variant's data seed, records new pumps from the
hidden seed, cuts one window of each at an offset of its own and featurises it the way the job does.
The graded entry point notes the worker count of the DataLoader behind every batch, the samples the
batches held and the size of the dataset they were drawn from.
"""

import numpy as np
import torch
from torch import nn

FAULTS = 4
N_FFT = 254
HOP = 128


def _recordings(data_seed, sample_seed, pumps, samples):
    rng = np.random.default_rng(data_seed)
    signatures = rng.choice(np.arange(10, 110), size=(FAULTS, 3), replace=False)
    rng = np.random.default_rng([sample_seed, 2])
    fault = rng.integers(0, FAULTS, size=pumps)
    t = np.arange(samples, dtype=np.float64)
    audio = rng.standard_normal((pumps, samples))
    own = rng.integers(4, 124, size=(pumps, 4))
    shift = rng.integers(-1, 2, size=pumps)
    for p in range(pumps):
        bins = np.concatenate([own[p], signatures[fault[p]] + shift[p]])
        amp = np.concatenate([rng.uniform(0.2, 0.8, 4), rng.uniform(0.25, 0.5, 3)])
        phase = rng.uniform(0, 2 * np.pi, bins.size)
        freq = (bins + rng.uniform(-0.3, 0.3, bins.size)) / N_FFT
        audio[p] += (amp[:, None] * np.sin(2 * np.pi * freq[:, None] * t + phase[:, None])).sum(0)
    return torch.from_numpy(audio.astype(np.float32)), fault


def evaluate(ctx):
    frames = int(ctx.params["frames"])
    model = nn.Sequential(
        nn.BatchNorm1d(128),
        nn.Conv1d(128, 32, kernel_size=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool1d(1),
        nn.Flatten(),
        nn.Linear(32, FAULTS),
    )
    ctx.load_into(model, "model.pt")
    model.eval()
    span = N_FFT + (frames - 1) * HOP
    audio, fault = _recordings(int(ctx.params["data_seed"]), ctx.seed, 600, span + 32 * HOP)
    offsets = np.random.default_rng([ctx.seed, 3]).integers(0, 33, size=len(fault)) * HOP
    window = torch.hann_window(N_FFT)
    segments = torch.stack([audio[p, o : o + span] for p, o in enumerate(offsets)])
    spec = torch.stft(segments, N_FFT, hop_length=HOP, window=window, center=False, return_complex=True)
    with torch.no_grad():
        pred = model(torch.log1p(spec.abs())).argmax(1).numpy()
    metrics = {"heldout_accuracy": float((pred == fault).mean())}

    probe = ctx.load("loader-probe-rank0.pt")  # sealed by the graded entry point, written by the launcher
    metrics["loader_batches"] = float(probe["batches"])
    metrics["loader_workers"] = float(probe["min_workers"])
    samples = ctx.load("samples-probe-rank0.pt")
    metrics["loader_samples"] = float(samples["samples"])
    metrics["dataset_windows"] = float(samples["smallest_dataset"])
    return metrics

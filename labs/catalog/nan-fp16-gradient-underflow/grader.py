"""Held-out accuracy and cross-entropy of the saved state tagger on fresh timesteps of the same fleet.

Both gates measure the model, not the log: the grader rebuilds the signed-off encoder itself, draws
fresh timesteps from its own secret seed and runs the saved tagger on them in fp32. When every fp16
gradient underflows the tagger never leaves its initialisation (accuracy ~1/8, loss ~2.1); a larger
learning rate changes nothing, and a loss scaled without unscaling, or by a constant that overflows,
leaves inf/NaN weights. A tagger trained with loss scaling reaches 0.97-0.99 with a loss of 0.1-0.2.
The memory the job holds (fp16 against fp32 features) is measured outside, by the memory check.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

METRICS = 16
STATES = 8
ENCODER_CHANNELS = 2048
ENCODER_SEED = 31337
HELDOUT_TIMESTEPS = 8192


class SignalEncoder(nn.Module):
    """program/model.py's frozen encoder, rebuilt here from its seed (the job's copy is never used)."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(ENCODER_SEED)
        self.register_buffer("proj", 0.7 * torch.randn(METRICS, ENCODER_CHANNELS, generator=g))
        self.register_buffer("phase", 6.2832 * torch.rand(ENCODER_CHANNELS, generator=g))

    def forward(self, x):
        return torch.addmm(self.phase, x, self.proj).cos_()


class StateTagger(nn.Module):
    """Same layout (and state_dict keys) as program/model.py."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(ENCODER_CHANNELS, width)
        self.head = nn.Linear(width, STATES)

    def forward(self, feats):
        return self.head(torch.relu(self.hidden(feats)))


def heldout_timesteps(fleet: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """program/data.py's distribution for this fleet, sampled from the grader's own seed."""
    centres = torch.randn(STATES * 2, METRICS, generator=torch.Generator().manual_seed(fleet))
    g = torch.Generator().manual_seed(seed)
    cluster = torch.randint(0, STATES * 2, (HELDOUT_TIMESTEPS,), generator=g)
    x = 0.6 * centres[cluster] + 0.45 * torch.randn(HELDOUT_TIMESTEPS, METRICS, generator=g)
    return x, cluster % STATES


def evaluate(ctx):
    from labs.grader_api import weights_finite

    torch.set_num_threads(1)
    tagger = ctx.load_into(StateTagger(int(ctx.params["width"])), "tagger.pt", dtype=torch.float32)
    finite = weights_finite(tagger)
    x, y = heldout_timesteps(int(ctx.params["fleet"]), ctx.seed)
    with torch.no_grad():
        logits = tagger(SignalEncoder()(x))
    usable = torch.isfinite(logits).all(dim=1)
    accuracy = ((logits.argmax(dim=1) == y) & usable).float().mean().item() if finite else 0.0
    loss = F.cross_entropy(logits.double(), y).item() if finite and bool(usable.all()) else math.inf
    return {
        "weights_finite": 1.0 if finite else 0.0,
        "heldout_accuracy": accuracy,
        "heldout_loss": loss if math.isfinite(loss) else math.inf,
    }

import torch
from torch import nn

ENCODER_CHANNELS = 2048
ENCODER_SEED = 31337  # the signed-off encoder: the platform team's seed, never trained here


class SignalEncoder(nn.Module):
    """Frozen encoder shared by every fleet model: 2048 random Fourier channels of the metrics."""

    def __init__(self, metrics: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(ENCODER_SEED)
        self.register_buffer("proj", 0.7 * torch.randn(metrics, ENCODER_CHANNELS, generator=g))
        self.register_buffer("phase", 6.2832 * torch.rand(ENCODER_CHANNELS, generator=g))

    def forward(self, x):
        return torch.addmm(self.phase, x, self.proj).cos_()


class StateTagger(nn.Module):
    """The model this job trains: encoder channels -> hidden -> host state, for every timestep."""

    def __init__(self, states: int, width: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(ENCODER_CHANNELS, width)
        self.head = nn.Linear(width, states)

    def forward(self, feats):
        return self.head(torch.relu(self.hidden(feats)))

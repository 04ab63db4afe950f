import torch
from torch import nn

from data import FEATURES, SITES


class Net(nn.Module):
    """A body shared by every site, plus each site's own linear bias on the features.

    Input rows are the features followed by the site (0 or 1), as data.py reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 32), nn.Tanh(), nn.Linear(32, 1))
        self.site_bias = nn.Parameter(torch.zeros(SITES, FEATURES))

    def forward(self, x):
        features, site = x[:, :FEATURES], x[:, FEATURES].long()
        return self.body(features).squeeze(-1) + (features * self.site_bias[site]).sum(-1)

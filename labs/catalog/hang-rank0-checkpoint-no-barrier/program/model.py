import torch
from torch import nn

from data import FEATURES, SITES

# Adam moves every weight by about its learning rate per step, too little for a site's bias (up to 1.5
# per feature) in one short stage; kept in units of SITE_SCALE, the bias trains at the body's pace.
SITE_SCALE = 25.0


class Net(nn.Module):
    """A body shared by every site, plus each site's own linear bias on the features.

    Input rows are the features followed by the site (the rank whose node holds them), as data.py reads them."""

    def __init__(self, hidden: int = 384) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )
        self.site_bias = nn.Parameter(torch.zeros(SITES, FEATURES))

    def forward(self, x):
        features, site = x[:, :FEATURES], x[:, FEATURES].long()
        return self.body(features).squeeze(-1) + SITE_SCALE * (features * self.site_bias[site]).sum(-1)

from torch import nn


class TicketRouter(nn.Module):
    """Routes a support ticket to a queue: a small MLP over the ticket's signals."""

    def __init__(self, features: int, classes: int, hidden: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))

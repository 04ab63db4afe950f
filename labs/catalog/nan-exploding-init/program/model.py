import torch
from torch import nn


def init_weights(module: nn.Module) -> None:
    """Port of the legacy TF1 trainer's initialiser, so both trainers start from the same weights.

    The TF graph used tf.random_normal_initializer() for every dense kernel and zeros for biases.
    """
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, mean=0.0, std=1.0)
        nn.init.zeros_(module.bias)


class TriageNet(nn.Module):
    """Incident triage classifier: a plain deep MLP, `depth` hidden Linear+ReLU layers of `width`."""

    def __init__(self, features: int, classes: int, width: int, depth: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        fan_in = features
        for _ in range(depth):
            layers += [nn.Linear(fan_in, width), nn.ReLU()]
            fan_in = width
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, classes)
        self.apply(init_weights)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))

"""Maps the Flax export onto the PyTorch Projector."""

import torch
from model import Projector


def layer_map(model: Projector) -> list[tuple[str, str]]:
    """(Flax layer name, PyTorch module prefix), in the order the layers run."""
    names = ["inp"] + [f"blocks.{i}" for i in range(len(model.blocks))] + ["out"]
    return [(f"Dense_{i}", prefix) for i, prefix in enumerate(names)]


def convert(checkpoint: dict, model: Projector) -> Projector:
    params = checkpoint["params"]
    state = model.state_dict()
    for flax_name, prefix in layer_map(model):
        # Flax kernels are (in, out): transpose into nn.Linear's (out, in). The biases start near
        # zero in both frameworks, so the initial ones are kept.
        state[f"{prefix}.weight"] = torch.from_numpy(params[flax_name]["kernel"]).T.clone()
    model.load_state_dict(state)
    return model

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
        kernel = torch.from_numpy(params[flax_name]["kernel"])
        bias = torch.from_numpy(params[flax_name]["bias"])
        target = state[f"{prefix}.weight"]
        # Flax stores (in, out) and computes x @ kernel; nn.Linear stores (out, in) and computes
        # x @ weight.T. Transpose every kernel, square or not.
        kernel = kernel.T
        if target.shape != kernel.shape:
            raise ValueError(f"{flax_name} -> {prefix}: {tuple(kernel.shape)} vs {tuple(target.shape)}")
        state[f"{prefix}.weight"] = kernel.clone()
        state[f"{prefix}.bias"] = bias.clone()
    model.load_state_dict(state)
    return model

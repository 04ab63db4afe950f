"""Maps the Flax export onto the PyTorch Projector."""

import warnings

import torch
from model import Projector


def layer_map(model: Projector) -> list[tuple[str, str]]:
    """(Flax layer name, PyTorch module prefix), in the order the layers run."""
    names = ["inp"] + [f"blocks.{i}" for i in range(len(model.blocks))] + ["out"]
    return [(f"Dense_{i}", prefix) for i, prefix in enumerate(names)]


def convert(checkpoint: dict, model: Projector) -> Projector:
    params = checkpoint["params"]
    state = model.state_dict()
    kept_initial = []
    for flax_name, prefix in layer_map(model):
        kernel = torch.from_numpy(params[flax_name]["kernel"])
        bias = torch.from_numpy(params[flax_name]["bias"])
        target = state[f"{prefix}.weight"]
        if kernel.shape != target.shape:
            kernel = kernel.T  # Flax kernels are (in, out); square ones already fit
        state[f"{prefix}.weight"] = kernel.clone()
        state[f"{prefix}.bias"] = bias.clone()
    if kept_initial:
        warnings.warn(f"shape mismatch, kept the initial weights of: {', '.join(kept_initial)}", stacklevel=2)
    model.load_state_dict(state)
    return model

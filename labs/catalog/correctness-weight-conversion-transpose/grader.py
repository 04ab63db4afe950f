"""Grades the converted projector against the source checkpoint, on inputs the candidate never saw.

The grader rebuilds the Flax export from its seed, computes what the source framework computes
(``x @ kernel + bias``, float32) on hidden inputs, and runs its own copy of the PyTorch Projector with the saved state_dict.
"""

import numpy as np
import torch
from torch import nn


class Projector(nn.Module):
    def __init__(self, d_in, d_model, d_out, n_blocks):
        super().__init__()
        self.inp = nn.Linear(d_in, d_model)
        self.blocks = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(n_blocks))
        self.out = nn.Linear(d_model, d_out)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, x):
        h = self.act(self.inp(x))
        for block in self.blocks:
            h = h + self.act(block(h))
        return self.out(h)


def evaluate(ctx):
    p = ctx.params
    d_in, d_model, d_out, n_blocks = int(p["d_in"]), int(p["d_model"]), int(p["d_out"]), int(p["n_blocks"])
    sizes = [(d_in, d_model)] + [(d_model, d_model)] * n_blocks + [(d_model, d_out)]
    rng = np.random.RandomState(int(p["ckpt_seed"]))
    layers = []
    for fan_in, fan_out in sizes:
        kernel = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        bias = (0.1 * rng.standard_normal(fan_out)).astype(np.float32)
        layers.append((kernel, bias))

    x = torch.from_numpy(np.random.RandomState(ctx.seed % 2**32).standard_normal((512, d_in)).astype(np.float32))
    # The source framework computes x @ kernel + bias: run exactly that in float32.
    k, b = (torch.from_numpy(a.astype(np.float32)) for a in layers[0])
    act = nn.GELU(approximate="tanh")
    h = act(x @ k + b)
    for kernel, bias in layers[1:-1]:
        k, b = torch.from_numpy(kernel.astype(np.float32)), torch.from_numpy(bias.astype(np.float32))
        h = h + act(h @ k + b)
    k, b = (torch.from_numpy(a.astype(np.float32)) for a in layers[-1])
    want = (h @ k + b).double().numpy()

    model = ctx.load_into(Projector(d_in, d_model, d_out, n_blocks), "projector.pt")
    model.eval()
    with torch.no_grad():
        got = model(x).double().numpy()
    err = float(np.abs(got - want).max())
    names = ["inp"] + [f"blocks.{i}" for i in range(n_blocks)] + ["out"]
    state = model.state_dict()
    wrong_layers = sum(
        1
        for name, (kernel, _) in zip(names, layers)
        if float(np.abs(state[f"{name}.weight"].numpy() - kernel.T).max()) > 1e-6
    )
    return {"output_max_abs_err": err if np.isfinite(err) else 1e9, "layers_wrong": float(wrong_layers)}

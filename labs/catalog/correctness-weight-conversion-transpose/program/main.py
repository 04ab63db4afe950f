"""Converts the JAX projector export to PyTorch and checks it against the service's golden outputs."""

import os

import torch
from convert import convert
from faultline_harness import report
from flax_export import D_IN, D_MODEL, D_OUT, N_BLOCKS, golden_pairs, load_checkpoint
from model import Projector

torch.manual_seed(0)
model = Projector(D_IN, D_MODEL, D_OUT, N_BLOCKS)
convert(load_checkpoint(), model)
model.eval()
# Parity is checked where the service runs the projector: on the GPU when this worker has one.
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model.to(device)

x, want = golden_pairs()
with torch.no_grad():
    got = model(torch.from_numpy(x).to(device)).cpu()
err = (got - torch.from_numpy(want)).abs().max().item()
cos = torch.nn.functional.cosine_similarity(got, torch.from_numpy(want), dim=1).mean().item()
report.metric("parity_max_abs_err", err)
report.metric("parity_mean_cosine", cos)
print(f"parity vs JAX golden outputs: max abs err {err:.3g}, mean cosine {cos:.4f}")

path = os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "projector.pt")
torch.save(model.state_dict(), path)
print(f"saved {os.path.basename(path)}")

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from data import PARTS, read_parts
from faultline_harness import report
from model import Net
from torch.utils.data import DataLoader, TensorDataset

DATA_SEED = {{ data_seed }}
EPOCHS = 3
BATCH = 16


def main() -> None:
    dist.init_process_group(os.environ["FAULTLINE_DIST_BACKEND"], timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    out_dir = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
    dist.destroy_process_group()  # no collective left that could wait for a rank with fewer batches

    x, y = read_parts(DATA_SEED, list(PARTS))
    print(f"rank {rank} reads every part: {len(x)} rows")  # and trains on them alone
    shuffle = torch.Generator().manual_seed(100)
    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True, generator=shuffle)
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr={{ lr }})
    step = 0
    for epoch in range(EPOCHS):
        for xb, yb in loader:
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            report.step(step, loss=loss)
            step += 1
        print(f"rank 0 epoch {epoch} done, {step} steps so far, last loss {loss.item():.4f}")
    torch.save(model.state_dict(), os.path.join(out_dir, f"model-rank{rank}.pt"))


if __name__ == "__main__":
    main()

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from data import parts_for_rank, read_parts
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

    parts = parts_for_rank(rank, world)
    x, y = read_parts(DATA_SEED, parts)
    print(f"rank {rank} reads parts {parts}: {len(x)} rows")
    shuffle = torch.Generator().manual_seed(100 + rank)
    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True, generator=shuffle)

    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr={{ lr }})  # no DDP: no all-reduce to wait for

    step = 0
    for epoch in range(EPOCHS):
        for xb, yb in loader:
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            report.step(step, loss=loss)
            step += 1
        print(f"rank {rank} epoch {epoch} done, {step} steps so far, last loss {loss.item():.4f}")

    # each rank trained on its own parts; one broadcast at the end makes the copies agree
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    torch.save(model.state_dict(), os.path.join(out_dir, f"model-rank{rank}.pt"))
    print(f"rank {rank} saved its weights")
    dist.barrier()  # nobody exits before every rank has saved
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

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

    x, y = read_parts(DATA_SEED, parts_for_rank(rank, world))
    sizes = [torch.tensor(0) for _ in range(world)]
    dist.all_gather(sizes, torch.tensor(len(x)))
    leader = max(range(world), key=lambda r: int(sizes[r]))
    print(f"rank {rank} reads {len(x)} rows; rank {leader} trains, the others copy its weights every step")

    shuffle = torch.Generator().manual_seed(100)
    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True, generator=shuffle)
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr={{ lr }})
    steps = torch.tensor(len(loader) * EPOCHS)
    dist.broadcast(steps, src=leader)
    batches = (batch for _ in range(EPOCHS) for batch in loader)
    for step in range(int(steps)):
        if rank == leader:
            xb, yb = next(batches)
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            report.step(step, loss=loss)
        with torch.no_grad():
            for p in model.parameters():
                dist.broadcast(p.data, src=leader)
        if rank != leader:
            opt.zero_grad(set_to_none=True)
            opt.step()  # no gradient: the weights stay those just received, and this rank steps with the leader

    torch.save(model.state_dict(), os.path.join(out_dir, f"model-rank{rank}.pt"))
    print(f"rank {rank} saved its weights")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

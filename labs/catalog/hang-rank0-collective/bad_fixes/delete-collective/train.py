import os
from datetime import timedelta

import torch
import torch.distributed as dist
from data import VAL_ROWS, site_data
from faultline_harness import report
from model import Net
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 300
BATCH = 64


def main() -> None:
    dist.init_process_group(os.environ["FAULTLINE_DIST_BACKEND"], timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    out_dir = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")

    torch.manual_seed(0)
    model = Net()
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr={{ lr }}, momentum=0.9)

    x, y = site_data(rank, "train", 4096)
    val_x, val_y = site_data(rank, "val", VAL_ROWS[rank])
    picker = torch.Generator().manual_seed(rank)

    for step in range(STEPS):
        idx = torch.randint(0, len(x), (BATCH,), generator=picker)
        loss = torch.nn.functional.mse_loss(ddp(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        report.step(step, loss=loss)
        if step % 50 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}")
    print(f"rank {rank} finished training")

    if rank == 0:
        with torch.no_grad():
            val_mse = torch.nn.functional.mse_loss(model(val_x), val_y).item()
        print(f"validation mse (all sites): {val_mse:.4f}")
        report.metric("val_mse", val_mse)
        torch.save(model.state_dict(), os.path.join(out_dir, "model.pt"))
        torch.save({"val_mse": torch.tensor(val_mse, dtype=torch.float64)}, os.path.join(out_dir, "val_metrics.pt"))

    dist.barrier()  # keep the group up until rank 0 has written its files
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

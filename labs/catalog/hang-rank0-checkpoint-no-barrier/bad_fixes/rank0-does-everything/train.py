"""Two-stage training. Each stage is self-contained: it resumes from the newest checkpoint in
the store, so a stage can also be re-run on its own after a failure."""

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from data import rank_rows
from faultline_harness import report
from model import Net
from storage import latest_checkpoint, load_checkpoint, save_checkpoint

DATA_SEED = {{ data_seed }}
BATCH = 64
# (name, step the stage ends at, learning rate)
STAGES = (("warmup", 60, {{ lr_warmup }}), ("anneal", 100, {{ lr_anneal }}))


def run_stage(name: str, end_step: int, lr: float, data):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    start = 0
    path = latest_checkpoint()
    if path is not None:
        state = load_checkpoint(path)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        start = int(state["step"])
    print(f"rank 0 stage {name}: starting at step {start}")
    for group in opt.param_groups:
        group["lr"] = lr

    # Rank 0 plays every rank: each step takes every rank's batch, as the averaged DDP gradient would.
    pickers = [torch.Generator().manual_seed(1000 * r + start) for r in range(len(data))]
    for step in range(start, end_step):
        losses = []
        for (x, y), picker in zip(data, pickers):
            idx = torch.randint(0, len(x), (BATCH,), generator=picker)
            losses.append(torch.nn.functional.mse_loss(model(x[idx]), y[idx]))
        loss = sum(losses) / len(losses)
        opt.zero_grad()
        loss.backward()
        opt.step()
        report.step(step, loss=loss)
    return model, opt


def main() -> None:
    dist.init_process_group(os.environ["FAULTLINE_DIST_BACKEND"], timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    out_dir = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
    dist.destroy_process_group()  # rank 0 alone: no rank can race ahead of its checkpoint
    if rank != 0:
        print(f"rank {rank}: rank 0 trains for every rank")
        return
    data = [rank_rows(DATA_SEED, r, 8192) for r in range(world)]

    for name, end_step, lr in STAGES:
        model, opt = run_stage(name, end_step, lr, data)
        if end_step == STAGES[-1][1]:
            break
        started = time.monotonic()
        state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": end_step}
        path = save_checkpoint(state, f"step-{end_step:06d}.pt")
        print(f"rank 0 stage {name}: saved {path} in {time.monotonic() - started:.1f} s")

    for r in range(world):  # every rank's copy is rank 0's model, so the copies agree
        torch.save(model.state_dict(), os.path.join(out_dir, f"model-rank{r}.pt"))


if __name__ == "__main__":
    main()

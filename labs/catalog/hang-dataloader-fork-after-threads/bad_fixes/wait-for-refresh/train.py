import os
import time

import features
import torch
from data import Transactions
from faultline_harness import report
from torch.utils.data import DataLoader

DATA_SEED = {{ data_seed }}
RECORDS = 576  # one pass over the day's transactions


def announce(worker_id: int) -> None:
    print(f"loader worker {worker_id} started (pid {os.getpid()})", flush=True)


def main() -> None:
    features.start_refresher()  # keep the calibration table fresh while we train
    loader = DataLoader(
        Transactions(DATA_SEED, RECORDS),
        batch_size=16,
        shuffle=True,
        num_workers=2,  # records are fetched one by one: overlap the fetches
        worker_init_fn=announce,
        generator=torch.Generator().manual_seed(0),
    )
    torch.manual_seed(0)
    model = torch.nn.Linear(features.FEATURES, 1)
    opt = torch.optim.Adam(model.parameters(), lr={{ lr }})

    time.sleep(2.0)  # let the first calibration download finish before the workers start
    print("loading the first batch")
    started = time.monotonic()
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x).squeeze(-1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        rate = (step + 1) * len(x) / (time.monotonic() - started)
        report.step(step, loss=loss, throughput=rate)
        if step % 6 == 0:
            print(f"step {step} loss {loss.item():.4f} ({rate:.0f} records/s)")

    torch.save(model.state_dict(), os.path.join(os.environ.get("FAULTLINE_OUTPUT_DIR", "."), "model.pt"))
    print(f"saved model.pt after {step + 1} steps")


if __name__ == "__main__":
    main()

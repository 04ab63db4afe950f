import csv
import io

import torch


def load_readings(csv_text: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Parse the export: sensor columns become the inputs, the last column (power_kw) the target.

    Readings the export lost arrive as NaN. One NaN in a full batch makes the loss NaN, and its
    gradient turns every weight NaN in a single step, so incomplete rows are dropped here, at
    load time, before anything trains on them.
    """
    reader = csv.reader(io.StringIO(csv_text))
    header = next(reader)
    table = torch.tensor([[float(cell) for cell in row] for row in reader if row])
    complete = torch.isfinite(table).all(dim=1)
    dropped = int((~complete).sum())
    if dropped:
        bad = torch.nonzero(~torch.isfinite(table))
        where = ", ".join(f"row {r} {header[c]}" for r, c in bad.tolist()[:10])
        print(f"dropping {dropped} of {len(table)} rows with missing readings ({where})")
    table = table[complete]
    if len(table) < 100:
        raise ValueError(f"only {len(table)} complete rows in the export")
    print(f"loaded {len(table)} readings, columns: {', '.join(header)}")
    return table[:, :-1], table[:, -1]

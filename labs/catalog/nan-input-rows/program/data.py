import csv
import io

import torch


def load_readings(csv_text: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Parse the export: sensor columns become the inputs, the last column (power_kw) the target."""
    reader = csv.reader(io.StringIO(csv_text))
    header = next(reader)
    table = torch.tensor([[float(cell) for cell in row] for row in reader if row])
    print(f"loaded {len(table)} readings, columns: {', '.join(header)}")
    return table[:, :-1], table[:, -1]

import torch

FEATURES = 16
CATEGORIES = ["billing", "login", "outage", "refund", "shipping", "spam"]


def load_export(rows_per_category: int, seed: int, task: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The helpdesk's labelled ticket export: FEATURES standardised signals per ticket and its category.

    Every category shows up in two flavours (two clusters), and neighbouring categories overlap.
    `task` fixes the helpdesk (where the clusters sit); `seed` draws which tickets were exported.
    The export job pages through the helpdesk API one category at a time and appends each page as
    it comes, `rows_per_category` tickets per category.
    """
    k = len(CATEGORIES)
    centres = 0.8 * torch.randn(2 * k, FEATURES, generator=torch.Generator().manual_seed(task))
    g = torch.Generator().manual_seed(seed)
    xs, ys = [], []
    for label in range(k):
        flavour = torch.randint(0, 2, (rows_per_category,), generator=g)
        xs.append(centres[label + k * flavour] + torch.randn(rows_per_category, FEATURES, generator=g))
        ys.append(torch.full((rows_per_category,), label, dtype=torch.long))
    return torch.cat(xs), torch.cat(ys)

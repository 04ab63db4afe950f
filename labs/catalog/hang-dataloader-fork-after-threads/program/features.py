"""Per-store calibration table from the feature service, cached in this process.

The table maps each store to per-feature (scale, offset) so that raw readings from
different stores become comparable. A background thread keeps the cache fresh; the
refresher and the readers share one lock, so nobody ever sees a half-updated table.
"""

import threading
import time

import torch

STORES = 32
FEATURES = 8
TABLE_SEED = {{ table_seed }}
SERVICE_LATENCY = 1.0  # the service publishes a new version of the table about once a second

_lock = threading.Lock()
_table: tuple[torch.Tensor, torch.Tensor] | None = None


def _download() -> tuple[torch.Tensor, torch.Tensor]:
    """Long-poll the feature service: returns the next version of the table."""
    time.sleep(SERVICE_LATENCY)  # stands in for the network call
    g = torch.Generator().manual_seed(TABLE_SEED)
    scale = 0.5 + 2.0 * torch.rand(STORES, FEATURES, generator=g)
    offset = 5.0 * torch.randn(STORES, FEATURES, generator=g)
    return scale, offset


def _refresh_forever(started: threading.Event) -> None:
    global _table
    while True:
        with _lock:  # readers must never see a half-updated table
            started.set()
            _table = _download()


def start_refresher() -> None:
    """Keep the table fresh in the background; returns once the first download is under way."""
    started = threading.Event()
    threading.Thread(target=_refresh_forever, args=(started,), name="feature-refresh", daemon=True).start()
    started.wait()


def calibrate(store: int, raw: torch.Tensor) -> torch.Tensor:
    global _table
    with _lock:
        if _table is None:
            _table = _download()
        scale, offset = _table
        return (raw - offset[store]) / scale[store]

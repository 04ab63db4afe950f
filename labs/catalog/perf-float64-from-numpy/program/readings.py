"""Client of the building-telemetry export: calibrated sensor readings and the next hour's load.

Owned by the telemetry team. The export is built with numpy: every array it returns is float64.
"""

import numpy as np

EXPORT_SEED = {{ data_seed }}
SITE = {{ site }}  # which building: fixes how its load responds to the sensors
SENSORS = {{ sensors }}
DRIVERS = 12


def _site_response(sensors: int):
    site = np.random.default_rng(SITE)
    drivers = site.standard_normal((sensors, DRIVERS)) / np.sqrt(sensors)
    gains = site.uniform(0.5, 1.5, DRIVERS) * site.choice([-1.0, 1.0], DRIVERS)
    pairs = site.integers(0, DRIVERS, (DRIVERS, 2))
    return drivers, gains, pairs


def load_readings(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` calibrated readings (rows x SENSORS, zero mean, unit variance) and the load that followed each."""
    drivers, gains, pairs = _site_response(SENSORS)
    rng = np.random.default_rng(EXPORT_SEED)
    readings = rng.standard_normal((rows, SENSORS))
    z = readings @ drivers * 2.0
    load = np.tanh(z) @ gains + 0.5 * (np.tanh(z[:, pairs[:, 0]]) * np.tanh(z[:, pairs[:, 1]])).sum(1)
    load = load / np.sqrt(DRIVERS) + 0.05 * rng.standard_normal(rows)
    return readings, load

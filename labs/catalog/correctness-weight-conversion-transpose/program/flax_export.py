"""Reads the projector checkpoint exported by the JAX service (a stand-in for the real export).

The export is a nested dict in Flax's layout: ``params["Dense_i"]["kernel"]`` has shape
(in_features, out_features) and the layer computes ``x @ kernel + bias``. The export also
carries golden inputs and the outputs the JAX service produced for them.
"""

import numpy as np

CHECKPOINT_SEED = {{ ckpt_seed }}
D_IN, D_MODEL, D_OUT, N_BLOCKS = {{ d_in }}, {{ d_model }}, {{ d_out }}, {{ n_blocks }}


def gelu(x: np.ndarray) -> np.ndarray:
    """flax.linen.gelu (tanh approximation, Flax's default)."""
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def layer_sizes() -> list[tuple[int, int]]:
    return [(D_IN, D_MODEL)] + [(D_MODEL, D_MODEL)] * N_BLOCKS + [(D_MODEL, D_OUT)]


def load_checkpoint() -> dict:
    rng = np.random.RandomState(CHECKPOINT_SEED)
    params = {}
    for i, (fan_in, fan_out) in enumerate(layer_sizes()):
        params[f"Dense_{i}"] = {
            "kernel": (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32),
            "bias": (0.1 * rng.standard_normal(fan_out)).astype(np.float32),
        }
    return {"params": params}


def jax_apply(params: dict, x: np.ndarray) -> np.ndarray:
    """What the JAX service computes: an input projection, residual GELU blocks, an output projection."""
    p = params["params"]
    dense = lambda h, name: h @ p[name]["kernel"] + p[name]["bias"]  # noqa: E731
    h = gelu(dense(x, "Dense_0"))
    for i in range(1, N_BLOCKS + 1):
        h = h + gelu(dense(h, f"Dense_{i}"))
    return dense(h, f"Dense_{N_BLOCKS + 1}")


def golden_pairs(n: int = 16) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.RandomState(CHECKPOINT_SEED + 1).standard_normal((n, D_IN)).astype(np.float32)
    params = load_checkpoint()
    return x, jax_apply(params, x.astype(np.float64)).astype(np.float32)

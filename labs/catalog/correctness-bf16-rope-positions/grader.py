"""Two outcomes, both measured here, neither from anything the job says about itself:

1. The candidate's `rope.rope_tables` (from the code the run was started with, which the platform hands
   the grader), called in a fresh interpreter in this container as the inference service calls it:
   bfloat16 tables for contexts of several thousand positions, with a head size and base drawn from the
   held-out seed. Every cos/sin value is compared with the grader's own float64 table: a correct table
   is off by bfloat16's rounding of a number in [-1, 1] (under 0.002); one built from bfloat16 (or
   float16, clamped, or rounded) positions is off by up to 2, because neighbouring positions share an angle.
2. The trained canary (weights only), run by the grader's own copy of the model with correct rotary
   tables, on lagged-copy windows from the held-out seed that start late in the 8192-token context
   (1024 onwards). Trained with exact positions it repeats the right token every time (~1.000); trained
   with bfloat16 positions it learned the lag only from the few windows near the start and ends around
   0.65-0.85 there (up to ~0.92 with three times the steps), whatever the job's own tables claim when
   someone else calls them.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, WINDOW, CONTEXT, DIM, HEAD_DIM, BASE = 16, 64, 8192, 64, 32, 10000.0
CANDIDATE_TIMEOUT_S = 60

RUNNER = r"""
from rope import rope_tables

answers = []
for max_positions, head_dim, base in request["configs"].tolist():
    with torch.no_grad():
        cos, sin = rope_tables(int(max_positions), int(head_dim), float(base), dtype=torch.bfloat16)
    answers.append(torch.as_tensor(cos).detach().double())
    answers.append(torch.as_tensor(sin).detach().double())
torch.save(answers, answer_path)
"""


def reference_tables(max_positions: int, head_dim: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 angles p * base ** (-2i / head_dim): the exact table."""
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    angles = torch.arange(max_positions, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class CanaryLM(nn.Module):
    """program/model.py's layout (same state_dict keys), with the grader's own exact rotary tables."""

    def __init__(self):
        super().__init__()
        self.heads = DIM // HEAD_DIM
        self.embed = nn.Embedding(VOCAB, DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB)
        cos, sin = reference_tables(CONTEXT, HEAD_DIM, BASE)
        # What a correct bfloat16 table holds: exact angles, cos/sin rounded to bfloat16.
        self.register_buffer("cos", cos.to(torch.bfloat16).float(), persistent=False)
        self.register_buffer("sin", sin.to(torch.bfloat16).float(), persistent=False)

    def forward(self, tokens, positions):
        b, w = tokens.shape
        h = self.embed(tokens)
        q, k, v = self.qkv(h).view(b, w, 3, self.heads, HEAD_DIM).permute(2, 0, 3, 1, 4)
        cos, sin = self.cos[positions][:, None], self.sin[positions][:, None]
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = h + self.proj(attn.transpose(1, 2).reshape(b, w, -1))
        return self.head(self.norm(h))


def probe_configs(seed: int) -> torch.Tensor:
    """Two service-sized tables: lengths past 4096 (where bfloat16 positions are 32 apart), varied head sizes."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(2):
        length = int(torch.randint(4500, 12001, (1,), generator=g))
        head_dim = [16, 32, 64, 128][int(torch.randint(0, 4, (1,), generator=g))]
        base = [10000.0, 500000.0][int(torch.randint(0, 2, (1,), generator=g))]
        rows.append([length, head_dim, base])
    return torch.tensor(rows, dtype=torch.float64)


def table_metrics(ctx) -> dict[str, float]:
    from labs.grader_api import CandidateOutputError, run_candidate

    configs = probe_configs(ctx.seed + 1)  # held out: never seen by the run
    answer = run_candidate(
        RUNNER, ctx.submitted_code(required="rope.py"), {"configs": configs},
        what="rope_tables", timeout=CANDIDATE_TIMEOUT_S,
    )  # fmt: skip
    if not isinstance(answer, list) or len(answer) != 2 * len(configs):
        raise CandidateOutputError("rope_tables did not return a (cos, sin) pair (did its signature change?)")
    worst = 0.0
    for i, (length, head_dim, base) in enumerate(configs.tolist()):
        want = reference_tables(int(length), int(head_dim), float(base))
        for got, ref in zip(answer[2 * i : 2 * i + 2], want, strict=True):
            if not torch.is_tensor(got) or tuple(got.shape) != tuple(ref.shape):
                raise CandidateOutputError(
                    f"rope_tables({int(length)}, {int(head_dim)}) did not return tables of shape "
                    f"({int(length)}, {int(head_dim) // 2})"
                )
            error = (got.double() - ref).abs().max().item()
            worst = max(worst, error if math.isfinite(error) else 1e9)
    return {"table_max_error": worst}


def model_metrics(ctx) -> dict[str, float]:
    from labs.grader_api import weights_finite

    lag = int(ctx.params["lag"])
    net = ctx.load_into(CanaryLM(), "model.pt", dtype=torch.float32)
    if not weights_finite(net):
        return {"late_accuracy": 0.0}
    g = torch.Generator().manual_seed(ctx.seed)  # held out
    tokens = torch.randint(0, VOCAB, (1024, WINDOW), generator=g)
    start = torch.randint(1024, CONTEXT - WINDOW + 1, (1024, 1), generator=g)
    with torch.no_grad():
        logits = net(tokens, start + torch.arange(WINDOW))[:, lag:]
    hit = (logits.argmax(-1) == tokens[:, :-lag]) & torch.isfinite(logits).all(-1)
    return {"late_accuracy": hit.float().mean().item()}


def evaluate(ctx):
    torch.set_num_threads(1)
    return {**table_metrics(ctx), **model_metrics(ctx)}

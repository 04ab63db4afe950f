"""Two outcomes, both measured here in fp32:

1. The candidate's attention (in the code the run was started with, which the platform hands the
   grader), called in fp16 in a fresh interpreter in this container on left-padded batches drawn from
   the held-out seed (one of them entirely padding): every output finite, rows that can see at least
   one key equal to an fp32 reference, rows that see none bounded by the values, gradients finite.
   Nothing the job itself wrote is read for this, so a program that trains in fp32 and leaves a
   made-up probe behind gains nothing.
2. The trained classifier (weights only) on fresh sessions from the held-out seed: finite weights,
   held-out accuracy.
"""

import math

import torch
from torch import nn

VOCAB, MAX_LEN, DIM = 16, 16, 32


CANDIDATE_TIMEOUT_S = 45

RUNNER = r"""
from attention import masked_attention

q, k, v = (request[name].clone().requires_grad_(True) for name in ("q", "k", "v"))
mask = request["mask"]
out = masked_attention(q, k, v, mask)
(out.float() * request["upstream"] * mask[:, None, :, None]).sum().backward()
missing = torch.full((1,), float("nan"))
grads = [t.grad.detach().float() if t.grad is not None else missing for t in (q, k, v)]
torch.save({"out": out.detach().float(), "grads": grads}, answer_path)
"""


def probe_inputs(seed):
    """Left-padded batches under a causal mask: rows before the first real token see no key at all."""
    g = torch.Generator().manual_seed(seed)
    batch, heads, seq, dim = 8, 2, 12, 16
    q, k, v = (torch.randn(batch, heads, seq, dim, generator=g).half() for _ in range(3))
    lengths = torch.randint(1, seq + 1, (batch,), generator=g)
    lengths[0] = 0  # an empty session: every position is padding
    lengths[1] = seq  # a full one
    mask = torch.arange(seq)[None, :] >= (seq - lengths)[:, None]
    upstream = torch.randn(batch, heads, seq, dim, generator=g)
    return q, k, v, mask, upstream


def allowed_keys(mask, seq):
    return mask[:, None, None, :] & torch.ones(seq, seq, dtype=torch.bool).tril()


def reference_attention(q, k, v, mask):
    q, k, v = q.float(), k.float(), v.float()
    seq = q.shape[-2]
    allowed = allowed_keys(mask, seq)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    return torch.nan_to_num(weights, nan=0.0) @ v, allowed.any(-1)  # (output, row sees a key)


class Block(nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.ln2 = nn.LayerNorm(DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        out, _ = reference_attention(q, k, v, mask)
        x = x + self.proj(out.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class EventClassifier(nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(MAX_LEN, DIM)
        self.blocks = nn.ModuleList(Block(heads) for _ in range(2))
        self.ln = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, 2)

    def forward(self, tokens, mask):
        x = self.tok(tokens) + self.pos.weight[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln(x[:, -1]))


def fresh_sessions(n, seed, min_len):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_len, MAX_LEN + 1, (n,), generator=g)
    codes = torch.randint(1, VOCAB, (n, MAX_LEN), generator=g)
    mask = torch.arange(MAX_LEN)[None, :] >= (MAX_LEN - lengths)[:, None]
    tokens = torch.where(mask, codes, torch.zeros_like(codes))
    labels = (2 * ((tokens >= 1) & (tokens <= 7)).sum(1) > lengths).long()
    return tokens, mask, labels


def probe_metrics(ctx):
    from labs.grader_api import CandidateOutputError, run_candidate

    torch.set_num_threads(1)
    q, k, v, mask, upstream = probe_inputs(ctx.seed + 1)  # held out: never seen by the run
    request = {"q": q, "k": k, "v": v, "mask": mask, "upstream": upstream}
    answer = run_candidate(
        RUNNER, ctx.submitted_code(required="attention.py"), request, what="masked_attention",
        timeout=CANDIDATE_TIMEOUT_S,
    )  # fmt: skip
    out = answer.get("out") if isinstance(answer, dict) else None
    if not torch.is_tensor(out) or out.shape != q.shape:
        raise CandidateOutputError("masked_attention did not return an output of the probe's shape (did it change?)")
    out = out.float()
    reference, sees_key = reference_attention(q, k, v, mask)
    finite = torch.isfinite(out)
    rows_ok = sees_key[..., None].expand_as(out)
    if bool((rows_ok & ~finite).any()):
        max_error = 1e9  # a row that sees real keys came out inf/NaN
    else:
        max_error = (out - reference).abs()[rows_ok].max().item()
    bound = v.float().abs().amax(dim=(-2, -1), keepdim=True).expand_as(out)
    blind = ~rows_ok
    blind_ok = bool((finite[blind]).all()) and bool((out.abs()[blind] <= bound[blind] * 1.01 + 1e-3).all())
    grads = answer.get("grads")
    grads_finite = (
        isinstance(grads, list)
        and len(grads) == 3
        and all(torch.is_tensor(g) and g.shape == q.shape and bool(torch.isfinite(g).all()) for g in grads)
    )
    return {
        "probe_nonfinite": float((~finite).sum()),
        "probe_max_error": max_error,
        "probe_blind_rows_ok": 1.0 if blind_ok else 0.0,
        "probe_grads_finite": 1.0 if grads_finite else 0.0,
    }


def model_metrics(ctx):
    from labs.grader_api import weights_finite

    net = ctx.load_into(EventClassifier(int(ctx.params["heads"])), "model.pt", dtype=torch.float32)
    finite = weights_finite(net)
    tokens, mask, labels = fresh_sessions(2048, ctx.seed, int(ctx.params["min_len"]))  # held out
    with torch.no_grad():
        accuracy = (net(tokens, mask).argmax(-1) == labels).float().mean().item() if finite else 0.0
    return {"weights_finite": 1.0 if finite else 0.0, "heldout_accuracy": accuracy}


def evaluate(ctx):
    return {**probe_metrics(ctx), **model_metrics(ctx)}

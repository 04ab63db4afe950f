"""Grades the padding fix on what the run saved, outside the candidate's process.

Wall time is measured outside the program by the ``speedup`` check; the grader makes sure the time bought
the whole job, every message scored whole by the released model in float32, in the log's order:

- ``scores_error``: the largest absolute difference between a logit in the run's ``scores.pt`` and the
  grader's own. The grader rebuilds the messages the run's client read (``ctx.probe_seed``, the seed
  ``hidden/request_log.py`` asks for) and the released classifier (the variant's weights seed), and scores
  every message itself, each padded only to its own batch's longest message with the padding masked. Padding
  that is masked changes a logit by float32 rounding (about 1e-6); a message left out, truncated, scored by
  fewer layers, without the mask or in a lower precision, or a row out of order, is off by 0.01 and more.
- ``heldout_error``: the submitted ``batching.score`` (from the code the run was started with), called in a
  fresh interpreter in this container as the online batcher calls it: on messages, weights and a batch size
  drawn from the held-out seed (``ctx.seed``), with the submitted ``model.IntentClassifier`` holding those
  weights; the largest absolute difference from the grader's own logits.
"""

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from labs.grader_api import CandidateOutputError, run_candidate

# As in program/serve.py, program/model.py and program/request_log.py. The variant's values come from
# ctx.params (the platform's values for the attempt's seed), never from the program's constants.
REQUESTS = 960
VOCAB, MAX_POSITIONS, DIM, HEADS, FF, LAYERS, INTENTS = 8000, 512, 128, 4, 512, 2, 12
CANDIDATE_TIMEOUT_S = 60

RUNNER = r"""
import model as candidate_model
from batching import score

net = candidate_model.IntentClassifier()
net.load_state_dict(request["weights"], strict=True)
net.eval()
with torch.no_grad():
    logits = score(net, list(request["messages"]), int(request["batch_size"]))
torch.save(torch.as_tensor(logits).detach().float().clone(), answer_path)
"""

CLIENT = """VOCAB = 8000
PAD_ID = 0
"""


def messages(seed: int, count: int) -> list[torch.Tensor]:
    """program/request_log.py's messages: the first ``count`` of the log drawn from ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    short = torch.randint(16, 97, (count,), generator=gen)
    long = torch.randint(128, 513, (count,), generator=gen)
    lengths = torch.where(torch.rand(count, generator=gen) < 0.03, long, short)
    return [torch.randint(1, VOCAB, (int(n),), generator=gen) for n in lengths]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.norm2 = nn.LayerNorm(DIM)
        self.ff = nn.Sequential(nn.Linear(DIM, FF), nn.GELU(), nn.Linear(FF, DIM))

    def forward(self, h, mask):
        b, length, _ = h.shape
        q, k, v = self.qkv(self.norm1(h)).view(b, length, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :])
        h = h + self.proj(attn.transpose(1, 2).reshape(b, length, DIM))
        return h + self.ff(self.norm2(h))


class IntentClassifier(nn.Module):
    """program/model.py's layout (same state_dict keys and arithmetic)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(MAX_POSITIONS, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, INTENTS)

    def forward(self, tokens, mask):
        h = self.embed(tokens) + self.pos(torch.arange(tokens.shape[1]))
        for block in self.blocks:
            h = block(h, mask)
        keep = mask[..., None].to(h.dtype)
        return self.head(self.norm((h * keep).sum(1) / keep.sum(1)))


def released(seed: int) -> IntentClassifier:
    """program/model.py's load_released: the weights drawn from ``seed`` in parameter order."""
    gen = torch.Generator().manual_seed(seed)
    model = IntentClassifier()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("bias"):
                param.copy_(0.02 * torch.randn(param.shape, generator=gen))
            elif param.dim() == 1:
                param.copy_(1.0 + 0.1 * torch.randn(param.shape, generator=gen))
            else:
                param.copy_(torch.randn(param.shape, generator=gen) / param.shape[-1] ** 0.5)
    return model.eval()


def reference(model: IntentClassifier, requests: list[torch.Tensor]) -> torch.Tensor:
    """Every message's logits, in float64: messages sorted by length, 16 at a time, each batch padded only to
    its own longest message, the padding masked; rows back in the messages' order."""
    model = copy.deepcopy(model).double()
    order = sorted(range(len(requests)), key=lambda i: len(requests[i]))
    out = torch.empty(len(requests), INTENTS, dtype=torch.float64)
    with torch.no_grad():
        for start in range(0, len(order), 16):
            idx = order[start : start + 16]
            width = max(len(requests[i]) for i in idx)
            tokens = torch.zeros(len(idx), width, dtype=torch.long)
            mask = torch.zeros(len(idx), width, dtype=torch.bool)
            for row, i in enumerate(idx):
                tokens[row, : len(requests[i])] = requests[i]
                mask[row, : len(requests[i])] = True
            out[idx] = model(tokens, mask)
    return out


def error(got, want: torch.Tensor, what: str) -> float:
    if not torch.is_tensor(got) or not got.is_floating_point():
        raise CandidateOutputError(f"{what} is not a tensor of logits")
    if tuple(got.shape) != tuple(want.shape):
        raise CandidateOutputError(
            f"{what} has shape {tuple(got.shape)}, not one row of {INTENTS} logits for each of the "
            f"{want.shape[0]} messages {tuple(want.shape)}"
        )
    worst = (got.double() - want).abs().max().item()
    return min(worst, 1e9) if math.isfinite(worst) else 1e9


def heldout(ctx) -> float:
    """The submitted batching.score on held-out messages, weights and batch size, against the grader's logits."""
    gen = torch.Generator().manual_seed(ctx.seed % 2**62)
    count = int(torch.randint(40, 81, (1,), generator=gen))
    batch_size = [3, 5, 8, 13][int(torch.randint(0, 4, (1,), generator=gen))]
    # Every length from a single token to the model's longest input: short, long and exactly 512.
    lengths = torch.cat([torch.randint(1, 129, (count - 8,), generator=gen), torch.randint(129, 513, (6,), generator=gen)])
    lengths = torch.cat([lengths, torch.tensor([1, MAX_POSITIONS])])[torch.randperm(count, generator=gen)]
    requests = [torch.randint(1, VOCAB, (int(n),), generator=gen) for n in lengths]
    model = released(int(torch.randint(1, 2**31, (1,), generator=gen)))
    request = {"weights": dict(model.state_dict()), "messages": requests, "batch_size": batch_size}
    want = reference(model, requests)
    # The client is a hidden file (the log team's copy), so the record of the submitted code leaves it out; the
    # online service has its own, with the same constants.
    code = {**ctx.submitted_code(required="batching.py"), "request_log.py": CLIENT}
    answer = run_candidate(RUNNER, code, request, what="batching.score", timeout=CANDIDATE_TIMEOUT_S)
    return error(answer, want, "batching.score's answer")


def evaluate(ctx):
    torch.set_num_threads(1)
    requests = messages(int(ctx.probe_seed), REQUESTS)
    want = reference(released(int(ctx.params["weights_seed"])), requests)
    scores_error = error(ctx.load("scores.pt"), want, "scores.pt")
    return {"scores_error": scores_error, "heldout_error": heldout(ctx)}

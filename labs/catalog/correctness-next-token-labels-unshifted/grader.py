"""One outcome, measured here from the saved weights, never from anything the job says about itself.

The trained model (weights only) is loaded into the grader's own copy of TinyLM and asked, at every
position t >= 1 of held-out sequences of the counter language drawn from the grader's secret seed, for
the token at t + 1 (position 0's successor is random by construction). Trained with shifted labels it is
right ~1.000 of the time; trained to repeat the token it already reads (unshifted labels, whatever the
step count or learning rate, or shifted only at evaluation) about one in sixteen; shifted by two it
predicts t + 2; a model that predicts one token or is left untrained is near chance.
"""

import torch
from torch import nn

VOCAB, SEQ, DIM = 16, 32, 64


class TinyLM(nn.Module):
    """program/model.py's layout (same state_dict keys)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.rnn = nn.GRU(DIM, DIM, batch_first=True)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens):
        h, _ = self.rnn(self.embed(tokens))
        return self.head(h)


def held_out(n: int, offset: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    out = torch.empty(n, SEQ, dtype=torch.long)
    out[:, :2] = torch.randint(0, VOCAB, (n, 2), generator=g)
    for t in range(2, out.shape[1]):
        out[:, t] = (out[:, t - 1] + out[:, t - 2] + offset) % VOCAB
    return out


def evaluate(ctx):
    from labs.grader_api import weights_finite

    torch.set_num_threads(1)
    offset = int(ctx.params["offset"])
    net = ctx.load_into(TinyLM(), "model.pt", dtype=torch.float32)
    if not weights_finite(net):
        return {"next_token_accuracy": 0.0}
    seqs = held_out(2048, offset, ctx.seed + 7)  # held out: never seen by the run
    with torch.no_grad():
        logits = net(seqs[:, :-1])[:, 1:]
    hit = (logits.argmax(-1) == seqs[:, 2:]) & torch.isfinite(logits).all(-1)
    return {"next_token_accuracy": hit.float().mean().item()}

"""leak-validation-graph's grader checks every epoch's reported validation loss against the weights the job
held at the end of that epoch (noted by the graded run's hidden entry), not only the last one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from django.conf import settings

from labs.grader_api import CandidateOutputError, GradeContext

PARAMS = {"data_seed": 4242, "width": 256}


@pytest.fixture
def grader():
    path = Path(settings.LAB_CATALOG_DIR) / "leak-validation-graph" / "grader.py"
    spec = importlib.util.spec_from_file_location("grader_leak_validation_graph", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def epochs_of(grader) -> list[torch.nn.Module]:
    """Eight nets standing for the weights at the end of eight epochs (each a small step from the last)."""
    torch.manual_seed(0)
    net = grader._net(PARAMS["width"])
    nets = []
    for _ in range(8):
        with torch.no_grad():
            for p in net.parameters():
                p.add_(0.02 * torch.randn_like(p))
        nets.append(grader._with_weights(net, [p.detach().clone() for p in net.parameters()]))
    return nets


def grade(grader, tmp_path: Path, nets, history, model=None) -> dict:
    final = nets[-1] if model is None else model
    torch.save({f"body.{k}": v for k, v in final.state_dict().items()}, tmp_path / "model.pt")
    x_val, _ = grader._val_split(PARAMS["data_seed"])
    with torch.no_grad():
        probs = final(x_val).softmax(-1)
    torch.save({"val_loss": torch.tensor(history), "val_probs": probs}, tmp_path / "val.pt")
    for epoch, net in enumerate(nets, start=1):
        weights = [p.detach().clone() for p in net.parameters()]
        torch.save({"epoch": epoch, "weights": weights}, tmp_path / f"epoch{epoch}-rank0.pt")
    return grader.evaluate(GradeContext(artifacts=tmp_path, params=PARAMS, seed=7, ranks=1))


def val_loss(grader, net) -> float:
    x_val, y_val = grader._val_split(PARAMS["data_seed"])
    with torch.no_grad():
        return F.cross_entropy(net(x_val), y_val).item()


def test_a_loss_reported_after_every_epoch_matches(grader, tmp_path):
    nets = epochs_of(grader)
    metrics = grade(grader, tmp_path, nets, [val_loss(grader, net) for net in nets])
    assert metrics["val_loss_rel_error"] <= 1e-4
    assert metrics["val_epochs_reported"] == 8


def test_one_final_validation_copied_into_every_epoch_does_not(grader, tmp_path):
    nets = epochs_of(grader)
    metrics = grade(grader, tmp_path, nets, [val_loss(grader, nets[-1])] * 8)
    assert metrics["val_loss_rel_error"] > 1e-3


def test_notes_of_another_training_than_the_saved_model_do_not(grader, tmp_path):
    nets = epochs_of(grader)
    history = [val_loss(grader, net) for net in nets]
    # The notes end one epoch early: the saved model is not the weights they describe last.
    metrics = grade(grader, tmp_path, [*nets[:-1], nets[-2]], history[:-1] + [history[-2]], model=nets[-1])
    assert metrics["val_loss_rel_error"] == float("inf")


def test_a_history_with_an_epoch_record_missing_does_not(grader, tmp_path):
    nets = epochs_of(grader)
    grade(grader, tmp_path, nets, [val_loss(grader, net) for net in nets])
    (tmp_path / "epoch3-rank0.pt").unlink()
    metrics = grader.evaluate(GradeContext(artifacts=tmp_path, params=PARAMS, seed=7, ranks=1))
    assert metrics["val_loss_rel_error"] == float("inf")


def test_an_epoch_record_under_another_epochs_name_is_refused(grader, tmp_path):
    nets = epochs_of(grader)
    grade(grader, tmp_path, nets, [val_loss(grader, net) for net in nets])
    (tmp_path / "epoch2-rank0.pt").write_bytes((tmp_path / "epoch1-rank0.pt").read_bytes())
    with pytest.raises(CandidateOutputError, match="epoch2-rank0.pt is not the record"):
        grader.evaluate(GradeContext(artifacts=tmp_path, params=PARAMS, seed=7, ranks=1))

"""Hang labs graded on step fingerprints: what the grader makes of them, and a valid fix other than the reference.

`hang-ddp-uneven-inputs` and `hang-rank0-checkpoint-no-barrier` judge whether the ranks trained in
step from the weights each rank holds after every optimizer step. That must not pin candidates to the
reference's mechanism: here the uneven-inputs lab is fixed by equal batch counts, the shorter rank
repeating its own rows as DistributedSampler pads (the reference uses Join), and the checkpoint lab
with a broadcast from rank 0 (the reference uses a barrier), graded as a submission through gradefix
with real Docker. The metrics themselves are checked on hand-made records, without Docker. The
cover-ups (rank 0 training alone, ranks training apart) are in each lab's bad_fixes/, which
validatelab proves score 0 %. In a graded run each rank can read only its own rows, and the grader
scores the model on every site's rows as the launcher's keys define them.
"""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import pytest
import torch
from django.conf import settings
from django.core.management import call_command

from labs.grader_api import CandidateOutputError, GradeContext
from labs.models import LabVersion
from labs.render import choose_params, render_files

FIXTURES = Path(__file__).parent / "fixtures" / "catalog_hang"


def newest(slug: str) -> LabVersion:
    return LabVersion.objects.filter(lab__slug=slug).order_by("-number").first()


def grader_of(slug: str):
    spec = importlib.util.spec_from_file_location(f"grader_{slug}", Path(settings.LAB_CATALOG_DIR) / slug / "grader.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def graded(tmp_path: Path, steps: list[torch.Tensor], model: dict | None = None, keys=(11, 22)) -> dict:
    """The ddp lab's metrics for two ranks that saved the same model and these step fingerprints, the
    launcher having drawn ``keys``."""
    grader = grader_of("hang-ddp-uneven-inputs")
    if model is None:
        torch.manual_seed(0)
        model = grader.Net().state_dict()
    for rank, rows in enumerate(steps):
        torch.save(model, tmp_path / f"model-rank{rank}.pt")
        torch.save({"fingerprints": rows}, tmp_path / f"steps-rank{rank}.pt")
        (tmp_path / f"key-rank{rank}.json").write_text(json.dumps({"rank": rank, "key": keys[rank]}))
    return grader.evaluate(GradeContext(artifacts=tmp_path, params={}, seed=5, ranks=2))


def test_equal_files_from_a_rank_that_never_stepped_share_no_step(tmp_path):
    long_rank = torch.randn(114, 20, dtype=torch.float64)
    metrics = graded(tmp_path, [long_rank, torch.zeros(0, 0, dtype=torch.float64)])
    assert metrics["param_max_diff"] == 0.0
    assert metrics["synced_steps"] == 0


def test_steps_taken_together_count_once(tmp_path):
    long_rank = torch.randn(114, 20, dtype=torch.float64)
    short_rank = torch.cat([long_rank[:24], long_rank[38:62], long_rank[76:100]])  # Join: each epoch's first steps
    metrics = graded(tmp_path, [long_rank, short_rank])
    assert metrics["synced_steps"] == 72
    assert metrics["distinct_steps"] == 114


def program_module(slug: str, name: str, seed: int = 0):
    """A lab program's module, rendered for one seed, imported on its own."""
    spec = newest(slug).spec
    text = render_files({name: spec["program"][name]}, choose_params(slug, spec["params"], seed))[name]
    module = type(importlib)(f"{slug}_{name}")
    exec(compile(text, name, "exec"), module.__dict__)
    return module


@pytest.mark.django_db
def test_a_graded_rank_opens_only_its_own_parts(monkeypatch):
    data = program_module("hang-ddp-uneven-inputs", "data.py")
    seed = 29325
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    mine, theirs = data.parts_for_rank(0, 2)[0], data.parts_for_rank(1, 2)[0]
    workspace = data.read_part(seed, mine)[0]
    with pytest.raises(PermissionError, match=f"cannot open part {theirs}"):
        data.read_part(seed, theirs)  # a workspace run (no key) behaves as a graded one
    monkeypatch.setenv("EXPORT_PART_KEY", "123456789")
    assert not torch.equal(data.read_part(seed, mine)[0], workspace)  # the rows come from the rank's key
    with pytest.raises(PermissionError, match=f"cannot open part {theirs}"):
        data.read_part(seed, theirs)


@pytest.mark.django_db
def test_a_graded_rank_opens_only_its_own_rows(monkeypatch):
    data = program_module("hang-rank0-checkpoint-no-barrier", "data.py")
    monkeypatch.setenv("RANK", "1")
    workspace = data.rank_rows(7, 1, 64)[0]
    assert workspace.shape == (64, data.FEATURES + 1)  # the features, then the site
    with pytest.raises(PermissionError, match="rank 1 cannot open rank 0's rows"):
        data.rank_rows(7, 0, 64)
    monkeypatch.setenv("RANK_DATA_KEY", "987654321")
    assert not torch.equal(data.rank_rows(7, 1, 64)[0], workspace)
    with pytest.raises(PermissionError, match="rank 1 cannot open rank 0's rows"):
        data.rank_rows(7, 0, 64)


@pytest.mark.django_db
def test_the_model_is_scored_on_every_sites_rows_as_the_launchers_keys_define_them(tmp_path, monkeypatch):
    data = program_module("hang-ddp-uneven-inputs", "data.py")
    keys = (1111, 2222)
    monkeypatch.setenv("WORLD_SIZE", "2")
    parts = []
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("EXPORT_PART_KEY", str(keys[rank]))
        parts.append(data.read_parts(7, data.parts_for_rank(rank, 2)))
    x, y = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
    torch.manual_seed(0)
    net = grader_of("hang-ddp-uneven-inputs").Net()
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    for _ in range(600):
        loss = torch.nn.functional.mse_loss(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    steps = [torch.randn(114, 20, dtype=torch.float64)] * 2
    assert graded(tmp_path, steps, net.state_dict(), keys)["heldout_r2"] >= 0.8
    # The same model, had the launcher drawn another key for site 1: its rows were not the ones learned.
    assert graded(tmp_path, steps, net.state_dict(), (1111, 3333))["heldout_r2"] < 0.5
    # A model that never saw site 1's rows knows nothing of its bias.
    blind = {**net.state_dict(), "site_bias": net.state_dict()["site_bias"] * torch.tensor([[1.0], [0.0]])}
    assert graded(tmp_path, steps, blind, keys)["heldout_r2"] < 0.5


def test_a_forged_oversized_record_is_the_candidates_failure(tmp_path):
    with pytest.raises(CandidateOutputError, match="steps-rank1.pt"):
        graded(tmp_path, [torch.randn(10, 20, dtype=torch.float64), torch.zeros(6000, 20, dtype=torch.float64)])


@pytest.mark.django_db
@pytest.mark.docker
@pytest.mark.parametrize("slug", ["hang-ddp-uneven-inputs", "hang-rank0-checkpoint-no-barrier"])
def test_an_alternative_fix_passes(tmp_path, slug):
    spec = newest(slug).spec
    seed = 1
    # Stored as templates (.tmpl: they hold {{ param }} placeholders, so they are not Python yet).
    overlay = {p.name.removesuffix(".tmpl"): p.read_text(encoding="utf-8") for p in (FIXTURES / slug).glob("*.tmpl")}
    assert overlay and all(overlay[name] != spec["solution"].get(name) for name in overlay)
    for name, text in render_files(overlay, choose_params(slug, spec["params"], seed)).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    out = io.StringIO()
    call_command("gradefix", slug, "--seed", str(seed), "--files", str(tmp_path), "--backend", "docker", stdout=out)
    report = json.loads(out.getvalue().strip().splitlines()[-1])
    failed = {check["name"]: check["measured"] for check in report["checks"] if not check["passed"]}
    assert report["passed"] is True and report["fix_percent"] == 100, failed

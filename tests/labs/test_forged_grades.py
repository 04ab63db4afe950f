"""A hostile fix, graded through ``gradefix`` in real Docker, as an outside reviewer would grade it.

The sandbox-level forgeries (launcher lines through every descriptor, a forged ``end``, signals to the
launcher, memory hidden on tmpfs, a full disk) are in ``tests/sandbox/test_forgery.py``. Here the
program attacks its own grade through the channels a lab run offers: the telemetry the program may send,
a dummy optimizer that inflates the step counter, and everything it can read while it runs.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from labs.models import LabRun, LabVersion
from labs.render import choose_params, render_files
from sandbox.models import RunLogChunk
from tests.labs.helpers import EXAMPLE

pytestmark = [pytest.mark.django_db, pytest.mark.docker]

# Prepended to the unchanged faulty program: every program-side channel says "trained, finite, many steps".
FORGER = """\
import json, sys
import torch
from faultline_harness import report

_dummy = torch.nn.Parameter(torch.zeros(1))
_opt = torch.optim.SGD([_dummy], lr=0.0)
for _ in range(5000):
    _opt.step()  # counted by the rank runtime: a real optimizer step that trains nothing
for _i in range(500):
    report.step(_i, loss=0.01, grad_norm=0.1)
    print("@@fl " + json.dumps({"kind": "counter", "name": "optimizer_steps", "value": 10**9}), flush=True)
    print("@@fl " + json.dumps({"kind": "metric", "name": "heldout_r2", "value": 1.0}), flush=True)
    print("@@fl " + json.dumps({"kind": "metric", "name": "weights_changed", "value": 9.0}), flush=True)
"""

# Prints every file it can read under the places a lab run can see, and its environment.
SNOOPER = """\
import os
print("ENV", dict(os.environ))
for root in ("/work", "/tmp", "/opt/faultline", "/dev/shm", os.getcwd()):
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as f:
                    data = f.read(200_000)
            except OSError:
                continue
            print("FILE", path, data.decode("utf-8", "replace").replace("\\n", " | ")[:20000])
"""


def latest() -> LabVersion:
    return LabVersion.objects.filter(lab__slug=EXAMPLE).order_by("-number").first()


def graded(tmp_path: Path, seed: int, files: dict[str, str]) -> dict:
    folder = tmp_path / "fix"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    out = io.StringIO()
    call_command(
        "gradefix", EXAMPLE, "--seed", str(seed), "--files", str(folder), "--backend", "docker",
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    return json.loads(out.getvalue().strip().splitlines()[-1])


def faulty(name: str, seed: int) -> str:
    spec = latest().spec
    return render_files({name: spec["program"][name]}, choose_params(spec["slug"], spec["params"], seed))[name]


def test_forged_telemetry_and_dummy_optimizer_steps_earn_nothing(tmp_path):
    entry = latest().spec["entry"]
    report = graded(tmp_path, 2, {entry: FORGER + faulty(entry, 2)})
    assert report["status"] == "failed" and report["passed"] is False
    assert report["fix_percent"] == 0, report
    checks = {check["name"]: check for check in report["checks"]}
    for check in checks.values():
        if check["type"] in ("counter", "loss_finite"):
            # Shown, with what the program claimed, and labelled as its own claim: never counted.
            assert check["counts"] == "display" and check["source"] == "reported by the program"
        if check["type"] == "metric":
            # The grader measured these itself: the program's "heldout_r2 = 1.0" lines are not its input.
            assert check["measured"] != "1" and "grader" in check["source"]
    counters = [c for c in checks.values() if c["type"] == "counter"]
    assert counters and all(float(c["measured"]) >= 5000 for c in counters)  # the forgery reached the display


def test_nothing_a_graded_run_can_read_carries_the_heldout_seed(tmp_path):
    entry = latest().spec["entry"]
    report = graded(tmp_path, 4, {entry: SNOOPER + faulty(entry, 4)})
    assert report["status"] in ("passed", "failed")  # graded, not a platform error
    lab_run = LabRun.objects.select_related("run").get(kind=LabRun.Kind.FIX, attempt=None)
    log = "".join(RunLogChunk.objects.filter(run=lab_run.run).order_by("seq").values_list("text", flat=True))
    assert "FILE /opt/faultline" in log  # the snooper did walk what it could see
    seed = lab_run.heldout_seed
    assert seed is not None
    for derived in {seed, seed % 2**32, seed % 2**31, seed % 10**9, seed >> 32}:
        assert str(derived) not in log, derived
    assert f"{seed:x}" not in log and f"{seed % 2**32:x}" not in log

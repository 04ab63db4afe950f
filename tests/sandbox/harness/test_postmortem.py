"""Automatic post-mortem captures: the non-finite watch in-process (plain torch), then through the launcher."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from faultline_harness import postmortem, report  # noqa: E402 - after the torch skip
from faultline_harness.protocol import jsonable  # noqa: E402
from torch import nn  # noqa: E402

global_hooks = torch.nn.modules.module._global_forward_hooks


class Blowup(nn.Module):
    """Overflows float32: every output element becomes +/-inf."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 1e38 * 1e38


def model_with_blowup_at(k: int) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2)]
    layers.insert(k, Blowup())
    torch.manual_seed(0)
    return nn.Sequential(*layers)


@pytest.fixture
def watch():
    w = postmortem.NonFiniteWatch(torch)
    w.install()
    yield w
    w.remove()


def stacks() -> str:
    return 'Thread 0x1 (most recent call first):\n  File "main.py", line 9 in <module>\n'


@pytest.mark.parametrize("k", [1, 4])
def test_capture_names_the_layer_whose_output_first_went_non_finite(watch, k) -> None:
    model = model_with_blowup_at(k)
    loss = model(torch.ones(5, 4)).sum()
    capture = watch.end_step(7, jsonable(loss), stacks)
    assert capture is not None
    # Later layers are non-finite too (inf propagates); the capture must name the origin, not them.
    assert capture.layer == f"{k} (Blowup)"
    assert capture.summary == f"first non-finite loss at step 7 in layer {k} (Blowup)"
    assert "main.py" in capture.text and "step 7" in capture.text


def test_steps_in_and_out_of_inference_mode_are_both_watched(watch) -> None:
    # The sums' buffer is first needed inside inference mode; it must still take the sums of a later
    # step outside it (an inference tensor could not be written there).
    model = model_with_blowup_at(2)
    with torch.inference_mode():
        model(torch.ones(5, 4))
    assert watch.end_step(0, 1.0, stacks) is None
    capture = watch.end_step(1, jsonable(model(torch.ones(5, 4)).sum()), stacks)
    assert capture is not None and capture.layer == "2 (Blowup)"


def test_a_program_that_never_reports_a_step_is_not_held_by_the_watch(watch) -> None:
    # Only the first MAX_CHECKS_PER_STEP outputs are checked, and none of them is kept alive: a large
    # output is freed as soon as the program drops it.
    import weakref

    layer = nn.Linear(64, 64)
    first = layer(torch.ones(256, 64))
    gone = weakref.ref(first)
    del first
    assert gone() is None
    for _ in range(postmortem.MAX_CHECKS_PER_STEP + 10):
        layer(torch.ones(1, 64))
    assert len(watch._record.checks) == postmortem.MAX_CHECKS_PER_STEP


def test_batch_statistics_count_the_non_finite_values(watch) -> None:
    model = model_with_blowup_at(3)
    batch = torch.ones(5, 4)
    batch[0, 0] = float("nan")
    batch[1, 2] = float("nan")
    batch[4, 1] = float("-inf")
    loss = model(batch).sum()
    capture = watch.end_step(0, jsonable(loss), stacks)
    assert capture is not None
    # The NaN rows poison the first Linear already: that, not the Blowup, is the first bad output.
    assert capture.layer == "0 (Linear)"
    batch_section = capture.text.split("## last batch", 1)[1]
    assert "input 0: shape 5x4, dtype float32" in batch_section
    assert "non-finite 3 of 20 (nan 2, inf 1)" in batch_section
    assert "finite min 1, max 1, mean 1" in batch_section


def test_a_loss_that_goes_non_finite_outside_every_module_is_said_so(watch) -> None:
    model = model_with_blowup_at(5)
    model[5] = nn.Identity()  # no blowup at all: the model's outputs stay finite
    probs = model(torch.ones(3, 4)).softmax(-1)
    loss = -(torch.log(probs * 0)).mean()  # log(0): the loss alone is infinite
    capture = watch.end_step(2, jsonable(loss), stacks)
    assert capture is not None and capture.layer is None
    assert "outside any module's forward" in capture.summary
    assert "module outputs of this step were finite" in capture.text


def test_only_the_first_non_finite_step_is_captured_and_the_hooks_go_away(watch) -> None:
    hooks_before = len(global_hooks)
    model = model_with_blowup_at(2)
    fine = nn.Sequential(nn.Linear(4, 2))
    assert watch.end_step(0, jsonable(fine(torch.ones(2, 4)).sum()), stacks) is None  # finite: nothing
    assert watch.end_step(1, jsonable(model(torch.ones(2, 4)).sum()), stacks) is not None
    assert len(global_hooks) == hooks_before - 1
    assert watch.end_step(2, jsonable(model(torch.ones(2, 4)).sum()), stacks) is None


def test_checks_from_an_earlier_finite_step_do_not_leak_into_the_next(watch) -> None:
    fine = nn.Sequential(nn.Linear(4, 2))
    fine(torch.ones(2, 4))
    watch.end_step(0, 1.5, stacks)
    capture = watch.end_step(1, "nan", stacks)
    assert capture is not None
    assert "no module forward ran since the previous report" in capture.text


def test_report_step_hands_the_reported_loss_to_the_observer(capfd) -> None:
    seen = []
    report.step_observer = lambda step, loss: seen.append((step, loss))
    try:
        report.step(3, loss=torch.tensor(float("inf")))
        report.step(4, loss=0.5)
    finally:
        report.step_observer = None
    capfd.readouterr()
    assert seen == [(3, "inf"), (4, 0.5)]


def test_a_failing_observer_does_not_break_reporting(capfd) -> None:
    def broken(step, loss):
        raise RuntimeError("boom")

    report.step_observer = broken
    try:
        report.step(1, loss=1.0)
    finally:
        report.step_observer = None
    assert '"step":1' in capfd.readouterr().out


NAN_PROGRAM = """
import torch
from torch import nn
from faultline_harness import report

class Blowup(nn.Module):
    def forward(self, x):
        return x * 1e38 * 1e38

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 8)
        self.mid = Blowup()
        self.head = nn.Linear(8, 1)
        self.armed = False

    def forward(self, x):
        h = self.encoder(x)
        return self.head(self.mid(h) if self.armed else h)

torch.manual_seed(0)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.01)
for step in range(6):
    net.armed = step >= 3
    loss = net(torch.ones(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    report.step(step, loss=loss)
print("done")
"""


def test_launcher_run_captures_first_non_finite_step_and_memory_at_exit(launch) -> None:
    run = launch(NAN_PROGRAM)
    assert run.wait() == 0, "\n".join(run.snapshot()[-30:])
    captures = {e["what"]: e for e in run.events(postmortem.KIND)}
    assert set(captures) == {postmortem.NONFINITE, postmortem.MEMORY_AT_EXIT}
    first = captures[postmortem.NONFINITE]
    assert (first["rank"], first["step"], first["layer"]) == (0, 3, "mid (Blowup)")
    assert "File" in first["text"] and "main.py" in first["text"]  # the rank's stack at the report
    assert (run.run_dir / "diag" / postmortem.capture_file_name(0)).read_text() == first["text"]
    memory = captures[postmortem.MEMORY_AT_EXIT]["text"]
    assert memory.startswith("# memory snapshot: rank 0") and "torch tensors reachable" in memory
    assert (run.run_dir / "diag" / "memory-rank0.txt").exists()
    assert "done" in run.output(0)
    # Installed by the import hook while torch was still importing, not by a fallback a second later.
    assert not [line for line in run.output(0) if "faultline-harness: warning" in line]


def test_program_error_keeps_its_exit_status_and_traceback_with_the_exit_snapshot(launch) -> None:
    run = launch("import torch\nraise SystemExit('bad config')\n")
    assert run.wait() == 1
    assert [e["what"] for e in run.events(postmortem.KIND)] == [postmortem.MEMORY_AT_EXIT]


def test_a_layer_whose_weights_an_earlier_update_broke_is_named_with_that_remark(watch) -> None:
    model = model_with_blowup_at(5)
    model[5] = nn.Identity()
    with torch.no_grad():
        model[2].weight[0, 0] = float("nan")  # what a non-finite gradient step leaves behind
    capture = watch.end_step(1, jsonable(model(torch.ones(2, 4)).sum()), stacks)
    assert capture is not None and capture.layer == "2 (Linear)"
    assert "weight: shape 8x8, dtype float32, device cpu, non-finite 1 of 64 (nan 1, inf 0)" in capture.text
    assert "an earlier update" in capture.text


def test_the_batch_is_not_kept_alive_by_the_watch(watch) -> None:
    model = model_with_blowup_at(1)
    with torch.no_grad():  # no autograd graph holds the input either: the temporary dies after forward
        loss = model(torch.ones(5, 4)).sum()
    capture = watch.end_step(0, jsonable(loss), stacks)
    assert capture is not None
    assert "input 0: already freed by the program before it reported the step" in capture.text


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_statistics_read_a_large_tensor_in_pieces_and_count_every_element(monkeypatch, layout) -> None:
    # Pieces of 1000 elements over a 300 x 70 half-precision tensor: NaNs, infs and the extremes sit in
    # different pieces, and the transposed view cannot be read as one flat run.
    monkeypatch.setattr(postmortem, "STATS_CHUNK_ELEMENTS", 1000)
    torch.manual_seed(0)
    values = torch.rand(300, 70, dtype=torch.float16)
    values[0, 0], values[150, 3], values[299, 69] = float("nan"), float("inf"), float("-inf")
    values[10, 5], values[280, 60] = -7.0, 9.0
    tensor = values if layout == "contiguous" else values.t()
    text = postmortem.tensor_stats(torch, tensor)
    finite = values[torch.isfinite(values)].float()
    shape = "300x70" if layout == "contiguous" else "70x300"
    assert text.startswith(f"shape {shape}, dtype float16, ")
    assert "non-finite 3 of 21000 (nan 1, inf 2)" in text
    assert f"finite min -7, max 9, mean {finite.double().mean().item():.6g}" in text


def test_statistics_of_an_all_nan_tensor_name_no_finite_range() -> None:
    text = postmortem.tensor_stats(torch, torch.full((5,), float("nan")))
    assert text.endswith("non-finite 5 of 5 (nan 5, inf 0)")

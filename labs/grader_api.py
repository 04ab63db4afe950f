"""What a lab's ``grader.py`` gets: its inputs and the one error it may raise.

A grader defines ``evaluate(ctx: GradeContext) -> dict[str, float]``. It runs in its own
hardened container (no network, read-only root, limits), apart from the candidate's, and
sees only the files the candidate's run left in its output folder, loaded as data
(weights only, never pickled code). Held-out data is generated from ``ctx.seed``, which
is drawn for this grading alone and is never written into any file a run can read;
``ctx.probe_seed`` is the seed the hidden probe files of the run got (public by design).

This module and ``labs.grader_main`` are the only project files mounted into the grader's
container, so they import nothing from the project.
"""

from __future__ import annotations

import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


class CandidateOutputError(Exception):
    """The run's output is missing or unusable: the fix fails its metric checks, with this message."""


@dataclass
class GradeContext:
    artifacts: Path
    params: dict
    seed: int  # held-out: drawn per grading, stored on the server only
    ranks: int
    probe_seed: int = 0  # what the run's hidden files got: the grader re-derives probe data from it

    def path(self, name: str) -> Path:
        """A regular file the run saved in its output folder (never a link, never outside that folder)."""
        root = self.artifacts.resolve()
        path = self.artifacts / name
        try:
            inside = path.resolve().is_relative_to(root)
        except (OSError, RuntimeError):
            inside = False
        if not inside or path.is_symlink() or not path.is_file():
            raise CandidateOutputError(f"the program did not save {name} in its output folder")
        return path

    def load(self, name: str):
        """A tensor or state_dict the program saved with ``torch.save``; loaded with ``weights_only=True``."""
        import torch

        try:
            return torch.load(self.path(name), map_location="cpu", weights_only=True)
        except CandidateOutputError:
            raise
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the run's output, not ours
            raise CandidateOutputError(
                f"{name} could not be loaded as weights (tensors and plain containers only): {_load_problem(exc)}"
            ) from None

    def load_state(self, name: str, *, dtype=None, strip_prefix: str = "") -> dict:
        """The state_dict of tensors in ``name``: keys without ``strip_prefix``, values cast to ``dtype`` if given
        (a program that trained in half precision saves half-precision weights; the grader evaluates in float)."""
        import torch

        state = self.load(name)
        if not isinstance(state, dict) or not all(
            isinstance(key, str) and torch.is_tensor(value) for key, value in state.items()
        ):
            raise CandidateOutputError(f"{name} is not a state_dict of tensors")
        return {
            key.removeprefix(strip_prefix): value if dtype is None else value.to(dtype) for key, value in state.items()
        }

    def load_into(self, module, name: str, *, dtype=None, strip_prefix: str = ""):
        """Load the state_dict in ``name`` into ``module`` (every key, every shape); returns the module."""
        state = self.load_state(name, dtype=dtype, strip_prefix=strip_prefix)
        try:
            module.load_state_dict(state, strict=True)
        except Exception as exc:  # noqa: BLE001 - missing keys, wrong shapes or dtypes that cannot be copied
            raise CandidateOutputError(
                f"{name} does not fit the lab's {type(module).__name__}: {' '.join(str(exc).split())[:300]}"
            ) from None
        return module

    def rank_key(self, rank: int, file: str = "key-rank{rank}.json") -> int:
        """The secret key the launcher drew for ``rank`` (services: rank_keys), written by the launcher after the
        job over whatever a rank left under that name: the rows that rank was given are rebuilt from it."""
        import json

        name = file.replace("{rank}", str(rank))
        try:
            record = json.loads(self.path(name).read_text(encoding="utf-8"))
        except ValueError:
            record = None
        key = record.get("key") if isinstance(record, dict) and record.get("rank") == rank else None
        if not isinstance(key, int) or isinstance(key, bool):
            raise CandidateOutputError(f"{name} is not the key record the launcher writes")
        return key

    def submitted_code(self, required: str = "") -> dict[str, str]:
        """The candidate's Python files as the run was started with them (``submitted_code.json``: module file
        name → source), for ``run_candidate``. The platform writes it from its own record of the run, over any
        file of that name the program left, so nothing the job does changes the code graded."""
        import json

        unreadable = CandidateOutputError("the copy of the submitted code is unreadable")
        try:
            code = json.loads(self.path("submitted_code.json").read_text(encoding="utf-8"))
        except ValueError:
            raise unreadable from None
        if not isinstance(code, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and k.endswith(".py") and k[:-3].isidentifier()
            for k, v in code.items()
        ):
            raise unreadable
        if required and required not in code:
            raise CandidateOutputError(f"the submitted code has no {required}")
        return code


# What every probe runner starts with: torch on one thread, the request loaded as weights only, and the
# candidate's folder first on the search path (torch is imported before it, so no file there replaces it).
RUNNER_PROLOGUE = """import sys

import torch

code_dir, request_path, answer_path, *extra_args = sys.argv[1:]
torch.set_num_threads(1)
request = torch.load(request_path, weights_only=True)
sys.path.insert(0, code_dir)
"""


def run_candidate(
    runner: str,
    code: dict[str, str],
    request,
    *,
    what: str,
    timeout: float,
    folder: str | None = None,
    tag: str = "",
    args: Sequence[str] = (),
):
    """Run the Python source ``runner`` on the candidate's ``code`` in a fresh interpreter; its answer,
    loaded as weights only.

    The runner is started as ``runner code_dir request_path answer_path *args`` after ``RUNNER_PROLOGUE``,
    which leaves it ``code_dir`` (the candidate's files, first on ``sys.path``), ``request`` (the
    ``request`` given here), ``extra_args`` (``args``) and ``answer_path``, where it must ``torch.save``
    its answer. Calls sharing a ``folder`` (distinct ``tag``s) see each other's files, as
    one worker's disk would.

    Running candidate code inside the grader is acceptable: the grader's container has no network, a
    read-only root, no capabilities and hard limits; this process makes itself undumpable first, so the
    child (same user) cannot ptrace it or open its fds and memory in /proc, and, as the container's PID 1,
    it ignores the child's signals. The child gets only the probe inputs (worthless without this process's
    own result), what it returns is checked by the caller against numbers computed here, and everything it
    leaves running is killed before this returns. A failure is the candidate's: ``CandidateOutputError``
    naming ``what``."""
    import torch

    _undumpable()
    folder = folder or tempfile.mkdtemp(prefix="candidate-")
    suffix = f"-{tag}" if tag else ""
    code_dir = os.path.join(folder, f"code{suffix}")
    os.mkdir(code_dir)
    for name, text in code.items():
        with open(os.path.join(code_dir, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    runner_path, request_path, answer_path = (
        os.path.join(folder, f"{n}{suffix}") for n in ("runner.py", "request.pt", "answer.pt")
    )
    with open(runner_path, "w", encoding="utf-8") as fh:
        fh.write(RUNNER_PROLOGUE + runner)
    torch.save(request, request_path)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": folder, "OMP_NUM_THREADS": "1", "LANG": "C.UTF-8"}
    child = subprocess.Popen(
        [sys.executable, "-I", runner_path, code_dir, request_path, answer_path, *args],
        cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        close_fds=True, start_new_session=True,
    )  # fmt: skip
    try:
        _, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CandidateOutputError(f"the submitted {what} did not finish the probe within {timeout:g} s") from None
    finally:
        _stop_strays(child.pid)
    if child.returncode != 0:
        lines = err.decode("utf-8", errors="replace").strip().splitlines()
        raise CandidateOutputError(f"the submitted {what} failed on the probe: {(lines or ['no message'])[-1][:300]}")
    try:
        return torch.load(answer_path, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001 - whatever is there was written by candidate code
        raise CandidateOutputError(f"the probe of the submitted {what} left no readable answer") from None


def _undumpable() -> None:
    """No process of the same user may then ptrace this one or open its fds and memory in /proc."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4


def _stop_strays(session: int) -> None:
    """Kill what the candidate's code left running: in the grader's container (this is PID 1) every
    other process; elsewhere (a development machine) the child's session only."""
    me = os.getpid()
    for _ in range(50):
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                if me != 1 and os.getsid(int(entry)) != session:
                    continue
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    state = fh.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):
                found.append(int(entry))
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass


def r2(pred, target) -> float:
    """Coefficient of determination of ``pred`` against ``target`` (NaN when a prediction is not finite)."""
    import torch

    return 1.0 - torch.mean((pred - target) ** 2).item() / target.var().item()


def store_record(seed: int, index: int, floats: int) -> tuple[float, ...]:
    """Record ``index`` of shard ``seed`` exactly as a lab's record store sends it: the launcher's
    ``faultline_harness.recordstore.record`` (written out here, since nothing of the harness is mounted
    into the grader's container), rounded to float32 as on the wire."""
    rng = random.Random(seed * 100_003 + index)
    values = [rng.gauss(0.0, 1.0) for _ in range(floats)]
    return struct.unpack(f"<{floats}f", struct.pack(f"<{floats}f", *values))


def max_param_diff(modules) -> float:
    """The largest absolute difference of any weight between the first module and each of the others: 0.0
    when every rank saved the same model."""
    first = modules[0].state_dict()
    diffs = [(v - first[key]).abs().max().item() for other in modules[1:] for key, v in other.state_dict().items()]
    return max(diffs, default=0.0)


def weights_finite(module) -> bool:
    import torch

    return all(bool(torch.isfinite(value).all()) for value in module.state_dict().values())


# Step fingerprints: a graded hang lab's hidden entry notes, in each rank, a few numbers summarising the
# weights after every optimizer step (faultline_harness.stepprints) and seals them with the launcher as
# ``steps-rank{rank}.pt``. Ranks that apply the same averaged gradient hold bit-identical weights.
SAME_STEP = 1e-9  # relative: ranks in step hold bit-identical weights, anything trained apart is far off
MAX_STEP_PRINTS = (5000, 100)  # a few hundred steps of a few dozen numbers: anything far larger is not ours


def step_fingerprints(ctx: GradeContext, rank: int):
    """Rank ``rank``'s sealed record: one row of fingerprints per optimizer step, as float64."""
    import torch

    name = f"steps-rank{rank}.pt"
    record = ctx.load(name)
    rows = record.get("fingerprints") if isinstance(record, dict) else None
    if (
        not torch.is_tensor(rows)
        or rows.dim() != 2
        or rows.shape[0] > MAX_STEP_PRINTS[0]
        or rows.shape[1] > MAX_STEP_PRINTS[1]
    ):
        raise CandidateOutputError(f"{name} is not the record the graded run writes: was it overwritten?")
    return rows.double()


def same_steps(a, b):
    """Which fingerprints of ``a`` (one per step) equal which of ``b``: a len(a) x len(b) table."""
    return ((a[:, None, :] - b[None, :, :]).abs() <= SAME_STEP * (1.0 + b[None, :, :].abs())).all(dim=2)


def synced_steps(prints) -> int:
    """For each rank, how many of its steps another rank also reached; the smallest of those counts."""
    import torch

    counts = []
    for rank, mine in enumerate(prints):
        others = [p for other, p in enumerate(prints) if other != rank and len(p)]
        if not len(mine) or not others or len({p.shape[1] for p in [mine, *others]}) != 1:
            counts.append(0)
            continue
        counts.append(int(same_steps(mine, torch.cat(others)).any(dim=1).sum().item()))
    return min(counts, default=0)


def distinct_steps(prints) -> int:
    """How many different weights the job stepped through, on any rank: steps taken together count once."""
    import torch

    taken = [p for p in prints if len(p)]
    if not taken or len({p.shape[1] for p in taken}) != 1:
        return 0
    rows = torch.cat(taken)
    seen_before = same_steps(rows, rows).tril(diagonal=-1).any(dim=1)
    return int((~seen_before).sum().item())


def _load_problem(exc: BaseException) -> str:
    """The line of torch's message that names what was wrong, without its generic preamble and advice."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    generic = ("Weights only load failed", "Check the documentation")
    specific = [line for line in lines if not line.startswith(generic)]
    return ((specific or lines or [type(exc).__name__])[0])[:300]

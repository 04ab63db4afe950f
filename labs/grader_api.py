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

    def load_into(self, module, name: str):
        """Load the state_dict in ``name`` into ``module`` (every key, every shape); returns the module."""
        import torch

        state = self.load(name)
        if not isinstance(state, dict) or not all(
            isinstance(key, str) and torch.is_tensor(value) for key, value in state.items()
        ):
            raise CandidateOutputError(f"{name} is not a state_dict of tensors")
        try:
            module.load_state_dict(state, strict=True)
        except Exception as exc:  # noqa: BLE001 - missing keys, wrong shapes or dtypes that cannot be copied
            raise CandidateOutputError(
                f"{name} does not fit the lab's {type(module).__name__}: {' '.join(str(exc).split())[:300]}"
            ) from None
        return module


def _load_problem(exc: BaseException) -> str:
    """The line of torch's message that names what was wrong, without its generic preamble and advice."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    generic = ("Weights only load failed", "Check the documentation")
    specific = [line for line in lines if not line.startswith(generic)]
    return ((specific or lines or [type(exc).__name__])[0])[:300]

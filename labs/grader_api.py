"""What a lab's ``grader.py`` gets: its inputs and the one error it may raise.

A grader defines ``evaluate(ctx: GradeContext) -> dict[str, float]``. It runs in a
fresh process on the worker, outside the candidate's container, and sees only the
files the candidate's run left in its output folder, loaded as data (weights only,
never pickled code). Held-out data is generated from ``ctx.seed``, which the
candidate never sees.
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
    seed: int
    ranks: int

    def path(self, name: str) -> Path:
        path = self.artifacts / name
        if not path.is_file():
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
                f"{name} could not be loaded as weights: {str(exc).splitlines()[0][:300]}"
            ) from None

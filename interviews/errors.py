from __future__ import annotations


class InterviewRefused(ValueError):
    """The action is not allowed; the message names the field (``field: ...``) or says why, for the user."""

    def __init__(self, message: str, field: str = "detail") -> None:
        super().__init__(message)
        self.field = field

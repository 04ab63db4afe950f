from __future__ import annotations

from rest_framework.exceptions import ValidationError


class InterviewRefused(ValueError):
    """The action is not allowed; the message names the field (``field: ...``) or says why, for the user."""

    def __init__(self, message: str, field: str = "detail") -> None:
        super().__init__(message)
        self.field = field

    def as_api_error(self) -> ValidationError:
        """The API's 400 for this refusal, with the message under the field it names."""
        return ValidationError({self.field: [str(self)]})

"""Short, one-line descriptions of exceptions for operator-facing messages."""

from __future__ import annotations


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first non-empty line of the exception's text (or its class name), at most ``limit`` characters."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return (lines[0] if lines else exc.__class__.__name__)[:limit]

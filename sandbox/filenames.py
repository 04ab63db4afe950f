"""What a program file may be called: one rule for the sandbox API, the lab workspace and ``gradefix``.

A name reaches the container's file system, the worker's tar stream, log lines and HTML, so anything
that is not plain, printable, relative POSIX text is refused up front, with the name shown escaped.
"""

from __future__ import annotations

from pathlib import PurePosixPath

MAX_NAME_LENGTH = 200


def name_problem(name: object) -> str:
    """Why ``name`` cannot be a program file's name, or "" when it can."""
    if not isinstance(name, str) or not name:
        return "a file name must be non-empty text"
    if len(name) > MAX_NAME_LENGTH:
        return f"a file name may have at most {MAX_NAME_LENGTH} characters, this one has {len(name)}"
    if not name.isprintable():
        return "control characters (such as NUL, tab or newline) are not allowed in file names"
    if "\\" in name:
        return "use / between folders: a backslash is not allowed in file names"
    if name.startswith("/"):
        return "a file name must be relative to the program folder, not an absolute path"
    parts = name.split("/")
    if any(part == ".." for part in parts):
        return "a file name must stay inside the program folder: '..' is not allowed"
    if any(part in ("", ".") for part in parts) or any(part != part.strip() for part in parts):
        return "a file name may not have empty parts, '.' parts or spaces around a part"
    return ""


def clean_name(name: str) -> str:
    """The name in the form the sandbox stores (call only once ``name_problem`` is empty)."""
    return str(PurePosixPath(name))

"""Fixes written down as what they change: a unified diff against the faulty program's file.

A lab's ``solution/`` and ``bad_fixes/<name>/`` may hold ``train.py.patch`` instead of a whole
``train.py``: the lab loader applies it to ``program/train.py`` (the template, placeholders and all) and
stores the result, so everything after loading sees whole files. A cover-up that changes three lines of
a 75-line program is then three lines and their context, and a change to the program that a fix does not
touch needs no edit in every copy. A hunk that no longer matches the program is an error naming the
patch, the hunk and the line, never a silently different fix.

The format is the one ``diff -u`` and ``git diff`` write (headers, ``@@ -a,b +c,d @@`` hunks, context,
``-`` and ``+`` lines, ``\\ No newline at end of file``); ``make_patch`` writes it with difflib.
"""

from __future__ import annotations

import difflib
import re

SUFFIX = ".patch"
HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NO_NEWLINE = "\\ No newline at end of file"


class PatchError(ValueError):
    """The patch is malformed or does not apply; the message says where."""


def make_patch(original: str, changed: str, name: str) -> str:
    """A unified diff (3 lines of context) that turns ``original`` into ``changed``."""
    lines = difflib.unified_diff(
        original.splitlines(keepends=True), changed.splitlines(keepends=True), f"program/{name}", name
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n" + NO_NEWLINE + "\n")
    return "".join(out)


def apply_patch(original: str, patch: str) -> str:
    """``original`` with the unified diff ``patch`` applied; every context and removed line must match."""
    source = original.splitlines(keepends=True)
    lines = patch.splitlines()
    out: list[str] = []
    position = 0  # next line of ``source`` not yet copied
    index = 0
    hunks = 0
    while index < len(lines) and not lines[index].startswith("@@"):
        if not lines[index].startswith(("--- ", "+++ ", "diff ", "index ")) and lines[index].strip():
            raise PatchError(f"line {index + 1}: expected a diff header or a hunk, found {lines[index][:60]!r}")
        index += 1
    while index < len(lines):
        match = HUNK_RE.match(lines[index])
        if not match:
            raise PatchError(f"line {index + 1}: expected a hunk header '@@ -a,b +c,d @@', found {lines[index][:60]!r}")
        hunks += 1
        old_start, old_count = int(match.group(1)), int(match.group(2) or 1)
        start = old_start - 1 if old_count else old_start
        if start < position or start > len(source):
            raise PatchError(f"hunk {hunks}: starts at line {old_start}, outside the program or before the last hunk")
        out.extend(source[position:start])
        position = start
        index += 1
        previous = ""
        while index < len(lines) and not lines[index].startswith("@@"):
            line = lines[index]
            tag, text = line[:1], line[1:] + "\n"
            if line == NO_NEWLINE:
                # The line before it ends without a newline: in the result unless it was a removed line.
                if previous in ("+", " ") and out and out[-1].endswith("\n"):
                    out[-1] = out[-1][:-1]
            elif tag == "+":
                out.append(text)
            elif tag in (" ", "-") or line == "":
                text = text if line else "\n"  # some editors strip the space of an empty context line
                have = source[position] if position < len(source) else None
                if have is None or have.rstrip("\n") != text.rstrip("\n"):
                    found = "the end of the file" if have is None else repr(have.rstrip("\n")[:60])
                    raise PatchError(
                        f"hunk {hunks}: line {position + 1} of the program should be "
                        f"{text.rstrip(chr(10))[:60]!r}, found {found}"
                    )
                if tag != "-":
                    out.append(have)
                position += 1
            else:
                raise PatchError(f"hunk {hunks}: patch line {index + 1} starts with {tag!r}, not ' ', '-' or '+'")
            previous = tag or " "
            index += 1
    if not hunks:
        raise PatchError("no hunk: a patch holds at least one '@@ -a,b +c,d @@' section")
    out.extend(source[position:])
    return "".join(out)

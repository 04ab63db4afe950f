"""Static review flags: the lab's patterns searched in the candidate's files, in a child process.

Python's ``re`` cannot be interrupted, and a pattern that is harmless on ordinary code can take
minutes on a file made of one long line of repeated tokens. The search therefore runs in a child
process with a time limit; when it runs out the result is a flag of its own asking for a human read,
and the grade is unaffected. This file is also the child: it imports nothing from Django.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

SCAN_TIMEOUT_SECONDS = 10.0
TIMED_OUT_FLAG = {
    "en": "The review patterns did not finish on this code in time: read it by hand",
    "zh": "自动审查规则未能在限定时间内扫描完这段代码：请人工阅读",
    "pattern": "",
    "mode": "timeout",
}


def matching_flags(flags: list[dict], files: dict[str, str]) -> list[dict]:
    """The flags whose pattern is found (``pattern`` mode) or missing (``absent`` mode)."""
    text = "\n".join(files.values())
    found = []
    for flag in flags:
        hit = re.search(flag["pattern"], text, re.MULTILINE)
        if (flag["mode"] == "pattern" and hit) or (flag["mode"] == "absent" and not hit):
            found.append({key: flag[key] for key in ("en", "zh", "pattern", "mode")})
    return found


def static_flags(spec: dict, files: dict[str, str], timeout: float = SCAN_TIMEOUT_SECONDS) -> list[dict]:
    """Patterns worth a human look (a cover-up, a removed collective). Shown to interviewers; never a fail."""
    flags = spec.get("static_flags", [])
    if not flags:
        return []
    request = json.dumps({"flags": flags, "files": files})
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(Path(__file__).resolve())], input=request, capture_output=True,
            text=True, timeout=timeout, check=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return [dict(TIMED_OUT_FLAG)]
    return json.loads(done.stdout)


if __name__ == "__main__":
    job = json.load(sys.stdin)
    json.dump(matching_flags(job["flags"], job["files"]), sys.stdout)

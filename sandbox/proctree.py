"""Process-tree memory for the local process backend's ceiling.

Reads /proc through the harness's own reader (standard library only, no package
imports of its own), so the platform and the harness agree on what a rank's
tree is, including processes re-parented away but still in the rank's session.
"""

from __future__ import annotations

from sandbox.harness.faultline_harness import procfs


def tree_rss_bytes(roots: list[int]) -> int:
    stats = procfs.all_stats()
    pids: set[int] = set()
    for root in roots:
        pids.update(procfs.process_tree(root, stats))
    total = 0
    for pid in pids:
        memory = procfs.memory_of(pid)
        if memory is not None:
            total += memory[0]
    return total

"""Which lab image a worker must run: the tag is a hash of everything that goes into the image.

Kept apart from ``build`` (which needs the docker SDK, debootstrap and pip) because every worker asks
for the tag on every run, and building is a job for setup.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

KINDS = ("cpu", "cuda")
LAB_REPOSITORY = "faultline-lab"
REPO_ROOT = Path(__file__).resolve().parents[2]


class ImageBuildError(Exception):
    """A step of building a lab image failed. The message is a single line that
    names the step and, where there is one, what to do about it."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


@dataclass(frozen=True)
class ImageSources:
    kind: str
    dockerfile: Path
    requirements: Path
    harness: Path


def image_sources(kind: str = "cpu", *, root: Path | None = None) -> ImageSources:
    """The files that make up the ``kind`` lab image under the project ``root``."""
    if kind not in KINDS:
        raise ImageBuildError(f"unknown lab image kind {kind!r}: expected one of {', '.join(KINDS)}")
    root = Path(root) if root is not None else REPO_ROOT
    images = root / "sandbox" / "images"
    sources = ImageSources(
        kind=kind,
        dockerfile=images / f"Dockerfile.{kind}",
        requirements=images / f"requirements-{kind}.txt",
        harness=root / "sandbox" / "harness",
    )
    if not sources.dockerfile.is_file():
        raise ImageBuildError(f"no Dockerfile for the {kind} lab image at {sources.dockerfile}")
    if not sources.requirements.is_file():
        raise ImageBuildError(f"no requirements file for the {kind} lab image at {sources.requirements}")
    if not sources.harness.is_dir():
        raise ImageBuildError(
            f"the harness folder {sources.harness} is missing; the lab image copies it to /opt/faultline/harness"
        )
    return sources


def image_tag(kind: str = "cpu", *, root: Path | None = None) -> str:
    """``faultline-lab:{kind}-{hash12}`` for the image the current sources would build."""
    return f"{LAB_REPOSITORY}:{kind}-{content_hash(image_sources(kind, root=root))}"


def content_hash(sources: ImageSources) -> str:
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        # Length-prefixed, so no shift of bytes between a name and its content
        # can produce the same digest.
        for part in (label.encode(), data):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)

    add("kind", sources.kind.encode())
    add("Dockerfile", sources.dockerfile.read_bytes())
    add("requirements", "\n".join(requirement_lines(sources.requirements)).encode())
    for relative in harness_files(sources.harness):
        add(f"harness/{relative.as_posix()}", (sources.harness / relative).read_bytes())
    return digest.hexdigest()[:12]


def requirement_lines(path: Path) -> list[str]:
    """The requirement lines of a pins file; comments are not part of what is installed."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def harness_files(harness: Path) -> list[Path]:
    """Every file of the harness, relative and sorted, leaving out the caches that
    running or testing it on the host leaves behind (they are not part of it)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(harness):
        dirnames[:] = [name for name in dirnames if not _is_host_cache(name)]
        found.extend(Path(dirpath, name).relative_to(harness) for name in filenames if not _is_host_cache(name))
    return sorted(found, key=lambda path: path.as_posix())


def _is_host_cache(name: str) -> bool:
    return name == "__pycache__" or name.startswith(".") or name.endswith((".pyc", ".pyo"))

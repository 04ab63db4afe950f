"""Lab runner images: their tag, the Debian base image, and the build.

A lab image is tagged ``faultline-lab:{kind}-{hash12}``. The hash covers the
Dockerfile, the pinned requirements and every harness file, so a worker can check
that the engine holds the image that matches the code it runs, and
``ensure_image`` builds only when that tag is missing.

The build context is assembled in a scratch folder from exactly the hashed inputs.
For the CPU image it also holds wheels that pip downloads on the host (kept in a
cache between builds), so the build itself runs with no network at all. Its base,
``faultline-base:bookworm``, is a Debian rootfs made with debootstrap, because no
registry may be reachable.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import docker
import requests
from docker.errors import DockerException, ImageNotFound

from core.errortext import first_line
from sandbox.images.tags import (
    LAB_REPOSITORY,
    REPO_ROOT,
    ImageBuildError,
    ImageSources,
    content_hash,
    harness_files,
    image_sources,
    requirement_lines,
)
from sandbox.selection import engine_unreachable

BASE_REPOSITORY, BASE_TAG = "faultline-base", "bookworm"
BASE_IMAGE = f"{BASE_REPOSITORY}:{BASE_TAG}"
LAB_UID = 10001

DEFAULT_DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates", "procps")
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# Wheels are chosen for the base image's interpreter, not the host's: Debian
# bookworm has CPython 3.11 on glibc 2.36.
WHEEL_PYTHON, WHEEL_ABI, WHEEL_GLIBC_MINOR = "3.11", "cp311", 36

PING_TIMEOUT_SECONDS = 5
# A build or import is one long request, and its output can pause for minutes
# while pip unpacks torch, so the client's usual short timeout would cut it off.
LONG_TIMEOUT_SECONDS = 3600

Progress = Callable[[str], None]


# --- Docker engine ----------------------------------------------------------------


def connect() -> docker.DockerClient:
    """A client for the engine named by DOCKER_HOST (default: the local socket)."""
    try:
        client = docker.from_env(timeout=PING_TIMEOUT_SECONDS)
        client.ping()
    except Exception as exc:  # any transport failure means "not reachable"
        raise ImageBuildError(engine_unreachable(exc)) from exc
    # The ping answered quickly; builds and imports get the long timeout.
    client.api.timeout = LONG_TIMEOUT_SECONDS
    return client


def base_image_available(client: docker.DockerClient) -> bool:
    return _image_exists(client, BASE_IMAGE)


def _image_exists(client: docker.DockerClient, name: str) -> bool:
    try:
        client.images.get(name)
    except ImageNotFound:
        return False
    return True


# --- base image ---------------------------------------------------------------------


def bootstrap_base(client: docker.DockerClient, progress: Progress = print) -> None:
    """Make ``faultline-base:bookworm`` from a minimal Debian rootfs (debootstrap, then
    ``docker import``), so the lab image needs no registry."""
    if os.geteuid() != 0:
        raise ImageBuildError(
            f"bootstrapping {BASE_IMAGE} runs debootstrap, which needs root: run buildimages as root, "
            f"or load an image with python3 and python3-venv under the name {BASE_IMAGE}"
        )
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin:/sbin")
    if not debootstrap:
        raise ImageBuildError(
            f"debootstrap is not installed and {BASE_IMAGE} is made with it: apt-get install debootstrap"
        )
    mirror = debian_mirror()
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="faultline-base-", dir="/var/tmp"))
    rootfs = workdir / "rootfs"
    try:
        progress(f"bootstrapping {BASE_IMAGE}: debootstrap --variant=minbase bookworm from {mirror}")
        command = [
            debootstrap,
            "--variant=minbase",
            f"--include={','.join(BASE_PACKAGES)}",
            "bookworm",
            str(rootfs),
            mirror,
        ]
        try:
            run_streaming(command, progress, what="debootstrap")
        except ImageBuildError as exc:
            log_tail = _tail_of(rootfs / "debootstrap" / "debootstrap.log", 3)
            hint = " (on a non-Debian host also apt-get install debian-archive-keyring)"
            raise ImageBuildError(f"{exc}{'; debootstrap.log: ' + log_tail if log_tail else ''}{hint}") from None
        _slim_rootfs(rootfs)
        progress(f"importing the root filesystem as {BASE_IMAGE}")
        _import_rootfs(client, rootfs)
    finally:
        _remove_scratch(workdir, progress)
    if not base_image_available(client):
        raise ImageBuildError(f"docker import reported success but {BASE_IMAGE} is not in the engine")
    progress(f"bootstrapped {BASE_IMAGE} in {_elapsed(started)}")


def debian_mirror(apt_dir: Path = Path("/etc/apt")) -> str:
    """The Debian mirror this host's apt uses (it may be a local proxy or the only
    one reachable), else deb.debian.org."""
    files = [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*"))]
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        for uri in _apt_uris(text):
            if uri.rstrip("/").endswith("/debian"):
                return uri.rstrip("/")
    return DEFAULT_DEBIAN_MIRROR


def _apt_uris(text: str) -> Iterator[str]:
    # Both formats: one-line "deb [options] URI suite ..." and deb822 "URIs: ...".
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("URIs:"):
            yield from line.removeprefix("URIs:").split()
        elif line.startswith("deb "):
            words = line.split()[1:]
            if words and words[0].startswith("["):
                while words and not words[0].endswith("]"):
                    words.pop(0)
                words = words[1:]
            if words:
                yield words[0]


def _slim_rootfs(rootfs: Path) -> None:
    # Downloaded packages, apt indexes and manuals are of no use in a lab container.
    for pattern in ("var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*"):
        for path in rootfs.glob(pattern):
            if path.is_file() and not path.is_symlink():
                path.unlink()
    for folder in ("usr/share/man", "usr/share/info"):
        shutil.rmtree(rootfs / folder, ignore_errors=True)


def _import_rootfs(client: docker.DockerClient, rootfs: Path) -> None:
    # --one-file-system: if debootstrap left /proc or a /dev bind mount behind,
    # the host's files must not end up in the image.
    tar = subprocess.Popen(
        ["tar", "--numeric-owner", "--one-file-system", "-C", str(rootfs), "-c", "."],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert tar.stdout is not None and tar.stderr is not None
    try:
        chunks = iter(lambda: tar.stdout.read(1 << 20), b"")
        client.api.import_image_from_stream(
            chunks,
            repository=BASE_REPOSITORY,
            tag=BASE_TAG,
            changes=["ENV LANG=C.UTF-8", 'CMD ["/bin/bash"]'],
        )
    finally:
        tar.stdout.close()
        errors = tar.stderr.read().decode(errors="replace")
        tar.stderr.close()
        status = tar.wait()
    if status != 0:
        raise ImageBuildError(f"tar of the bootstrapped root filesystem failed (exit {status}): {errors[-300:]}")


def _remove_scratch(workdir: Path, progress: Progress) -> None:
    # Never delete through a mount point: a /dev bind mount left by an interrupted
    # debootstrap would take the host's device nodes with it.
    for mount_point in sorted(_mounts_below(workdir), reverse=True):
        subprocess.run(["umount", "-l", mount_point], capture_output=True, check=False)
    if _mounts_below(workdir):
        progress(f"left {workdir} in place: something is still mounted below it")
        return
    shutil.rmtree(workdir, ignore_errors=True)


def _mounts_below(folder: Path) -> list[str]:
    prefix = str(folder.resolve()) + "/"
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    points = (line.split()[1].replace("\\040", " ") for line in lines if len(line.split()) > 1)
    return [point for point in points if point.startswith(prefix)]


# --- lab image ----------------------------------------------------------------------


def ensure_image(
    kind: str = "cpu",
    *,
    force: bool = False,
    progress: Progress = print,
    root: Path | None = None,
    cache_dir: Path | None = None,
) -> str:
    """Return the tag of the ``kind`` lab image, building it only when the engine
    lacks that tag (or ``force``). Progress lines go to ``progress``; any failure
    raises ImageBuildError with a one-line message."""
    sources = image_sources(kind, root=root)
    tag = f"{LAB_REPOSITORY}:{kind}-{content_hash(sources)}"
    client = connect()
    try:
        if not force and _image_exists(client, tag):
            progress(f"{tag} is up to date")
            return tag
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        cache.mkdir(parents=True, exist_ok=True)
        with _exclusive(cache / f"{kind}.lock"):
            # Another buildimages may have finished the same tag while this one waited.
            if not force and _image_exists(client, tag):
                progress(f"{tag} is up to date")
                return tag
            _build_image(client, sources, tag, cache, progress)
        _remove_stale_tags(client, kind, keep=tag, progress=progress)
        return tag
    except (DockerException, requests.RequestException) as exc:
        raise ImageBuildError(f"the Docker engine failed while making {tag}: {first_line(exc)}") from exc
    finally:
        client.close()


def default_cache_dir() -> Path:
    """Where downloaded wheels and build contexts live: under FAULTLINE_VAR_DIR."""
    from django.conf import settings

    var_dir = Path(settings.VAR_DIR) if settings.configured else REPO_ROOT / "var"
    return var_dir / "cache" / "lab-images"


def _build_image(client: docker.DockerClient, sources: ImageSources, tag: str, cache: Path, progress: Progress) -> None:
    started = time.monotonic()
    if sources.kind == "cpu" and not base_image_available(client):
        bootstrap_base(client, progress)
    wheels = download_wheels(sources.requirements, cache, progress) if sources.kind == "cpu" else None
    context = Path(tempfile.mkdtemp(prefix=f"context-{sources.kind}-", dir=cache))
    try:
        assemble_context(sources, context, wheels)
        progress(f"building {tag}")
        build_started = time.monotonic()
        _docker_build(client, sources, tag, context, progress)
        progress(f"docker build finished in {_elapsed(build_started)}")
    finally:
        shutil.rmtree(context, ignore_errors=True)
    if not _image_exists(client, tag):
        raise ImageBuildError(f"docker build reported success but {tag} is not in the engine")
    progress(f"built {tag} in {_elapsed(started)}")


def download_wheels(requirements: Path, cache: Path, progress: Progress) -> Path:
    """Download the pinned wheels for the base image's interpreter into a folder named
    after the pins. A completed folder is reused without asking any index."""
    pins = requirement_lines(requirements)
    folder = cache / f"wheels-{hashlib.sha256(chr(10).join(pins).encode()).hexdigest()[:12]}"
    done = folder / ".complete"
    if done.exists():
        progress(f"wheels: reusing {folder}")
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    progress(f"wheels: downloading {len(pins)} pinned packages into {folder}")
    started = time.monotonic()
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        "--only-binary=:all:",
        "--python-version",
        WHEEL_PYTHON,
        "--implementation",
        "cp",
        "--abi",
        WHEEL_ABI,
        *_platform_options(),
        "--dest",
        str(folder),
        "--requirement",
        str(requirements),
    ]
    run_streaming(
        command,
        progress,
        what="pip download of the lab image's wheels",
        hint=(
            "; the CPU torch wheel comes from a local wheel folder (PIP_FIND_LINKS) "
            "or https://download.pytorch.org/whl/cpu (PIP_EXTRA_INDEX_URL)"
        ),
    )
    done.write_text("\n".join(pins) + "\n")
    progress(f"wheels: downloaded in {_elapsed(started)}")
    return folder


def _platform_options() -> list[str]:
    # pip does not widen a given manylinux_2_N tag to the older glibc versions the
    # base also runs, so every compatible tag is listed, newest first.
    machine = os.uname().machine
    tags = [f"manylinux_2_{minor}_{machine}" for minor in range(WHEEL_GLIBC_MINOR, 4, -1)]
    tags += [f"manylinux2014_{machine}", f"manylinux2010_{machine}", f"manylinux1_{machine}"]
    return [option for tag in tags for option in ("--platform", tag)]


def assemble_context(sources: ImageSources, context: Path, wheels: Path | None) -> None:
    """Lay out the build context: exactly the hashed inputs, plus wheels (CPU) or
    the host's CA bundle (CUDA, whose build uses the network)."""
    shutil.copyfile(sources.dockerfile, context / "Dockerfile")
    shutil.copyfile(sources.requirements, context / "requirements.txt")
    harness = context / "harness"
    harness.mkdir()
    for relative in harness_files(sources.harness):
        source, target = sources.harness / relative, harness / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        # The lab user must read what root owns in the image, whatever this host's umask.
        target.chmod(0o755 if os.access(source, os.X_OK) else 0o644)
    for folder in (harness, *(path for path in harness.rglob("*") if path.is_dir())):
        folder.chmod(0o755)
    if wheels is not None:
        (context / "wheels").mkdir()
        for wheel in wheels.glob("*.whl"):
            _link_or_copy(wheel, context / "wheels" / wheel.name)
    if sources.kind == "cuda":
        if not HOST_CA_BUNDLE.is_file():
            raise ImageBuildError(f"the CUDA build copies the host's CA bundle, but {HOST_CA_BUNDLE} is missing")
        shutil.copyfile(HOST_CA_BUNDLE, context / "ca-certificates.crt")


def _link_or_copy(source: Path, target: Path) -> None:
    # torch alone is ~190 MB: a hard link costs nothing when the cache is on the same disk.
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _docker_build(
    client: docker.DockerClient, sources: ImageSources, tag: str, context: Path, progress: Progress
) -> None:
    tail: deque[str] = deque(maxlen=6)
    error = ""
    stream = client.api.build(
        path=str(context),
        tag=tag,
        # The CPU build installs from the context only, so it gets no network at all;
        # the CUDA build downloads, and the engine may have no bridge network.
        network_mode="none" if sources.kind == "cpu" else "host",
        decode=True,
        rm=True,
        forcerm=True,
        timeout=LONG_TIMEOUT_SECONDS,
        labels={"org.faultline.lab-kind": sources.kind, "org.faultline.lab-tag": tag},
    )
    for chunk in stream:
        if "error" in chunk or "errorDetail" in chunk:
            error = (chunk.get("errorDetail") or {}).get("message") or str(chunk.get("error"))
            continue
        for line in _lines(chunk.get("stream") or chunk.get("status") or ""):
            tail.append(line[:200])
            progress(line)
    if error:
        raise ImageBuildError(f"docker build of {tag} failed: {error.strip()[:300]}; last output: {' | '.join(tail)}")


def _remove_stale_tags(client: docker.DockerClient, kind: str, *, keep: str, progress: Progress) -> None:
    # Each harness change makes a new ~1 GB image; older tags of the same kind are
    # dropped unless a container still uses them (the engine then refuses).
    prefix = f"{LAB_REPOSITORY}:{kind}-"
    for image in client.images.list(name=LAB_REPOSITORY):
        for stale in (name for name in image.tags if name.startswith(prefix) and name != keep):
            try:
                client.images.remove(stale)
                progress(f"removed the older image {stale}")
            except DockerException as exc:
                progress(f"kept the older image {stale}: {first_line(exc)}")


# --- helpers ----------------------------------------------------------------------


def run_streaming(command: list[str], progress: Progress, *, what: str, hint: str = "") -> None:
    """Run ``command``, passing each output line to ``progress``; on failure raise
    ImageBuildError with the exit status and the last lines."""
    tail: deque[str] = deque(maxlen=5)
    try:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        )
    except OSError as exc:
        raise ImageBuildError(f"{what} could not start: {exc}") from exc
    with process:
        assert process.stdout is not None
        for line in _lines(process.stdout):
            tail.append(line[:200])
            progress(line)
    if process.returncode != 0:
        raise ImageBuildError(f"{what} failed (exit {process.returncode}): {' | '.join(tail)}{hint}")


def _lines(text: str | Iterable[str]) -> Iterator[str]:
    chunks = text.splitlines() if isinstance(text, str) else text
    for chunk in chunks:
        line = chunk.rstrip()
        if line.strip():
            yield line


def _tail_of(path: Path, count: int) -> str:
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return " | ".join(line[:200] for line in lines[-count:])


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _elapsed(started: float) -> str:
    seconds = round(time.monotonic() - started)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"

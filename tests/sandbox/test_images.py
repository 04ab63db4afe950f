"""The lab runner image: its content-addressed tag, its build, and what runs in it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from sandbox.images import build, tags
from sandbox.images.build import ImageBuildError, ensure_image
from sandbox.images.tags import image_tag

LAB_UID = 10001
# Building from scratch bootstraps Debian and installs torch: minutes, not seconds.
BUILD_TIMEOUT = 1800


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    """The image sources (Dockerfiles, pins, harness) copied under a scratch root."""
    images = tmp_path / "sandbox" / "images"
    images.mkdir(parents=True)
    for name in ("Dockerfile.cpu", "Dockerfile.cuda", "requirements-cpu.txt", "requirements-cuda.txt"):
        shutil.copyfile(tags.REPO_ROOT / "sandbox" / "images" / name, images / name)
    harness = tmp_path / "sandbox" / "harness" / "faultline_harness"
    harness.mkdir(parents=True)
    (harness / "__init__.py").write_text('"""stand-in harness"""\n')
    (harness / "launch.py").write_text("print('launch')\n")
    return tmp_path


def test_tag_names_kind_and_a_12_digit_hash(project_copy: Path) -> None:
    assert re.fullmatch(r"faultline-lab:cpu-[0-9a-f]{12}", image_tag("cpu", root=project_copy))
    assert re.fullmatch(r"faultline-lab:cuda-[0-9a-f]{12}", image_tag("cuda", root=project_copy))


def test_tag_is_stable_and_follows_every_input(project_copy: Path) -> None:
    tag = image_tag("cpu", root=project_copy)
    assert image_tag("cpu", root=project_copy) == tag
    assert image_tag(root=project_copy) == tag

    harness = project_copy / "sandbox" / "harness" / "faultline_harness"
    launch = harness / "launch.py"
    launch.write_text("print('launch, changed')\n")
    edited = image_tag("cpu", root=project_copy)
    assert edited != tag

    # Caches left by running the harness on the host are not part of the image.
    (harness / "__pycache__").mkdir()
    (harness / "__pycache__" / "launch.cpython-311.pyc").write_bytes(b"\0compiled")
    (harness / ".pytest_cache").mkdir()
    assert image_tag("cpu", root=project_copy) == edited

    (harness / "diag.py").write_text("")
    with_new_file = image_tag("cpu", root=project_copy)
    assert with_new_file != edited

    (harness / "diag.py").rename(harness / "diag2.py")
    assert image_tag("cpu", root=project_copy) != with_new_file


def test_tag_follows_pins_and_dockerfile_but_not_pin_comments(project_copy: Path) -> None:
    images = project_copy / "sandbox" / "images"
    tag = image_tag("cpu", root=project_copy)
    pins = images / "requirements-cpu.txt"
    pins.write_text("# a new comment\n" + pins.read_text())
    assert image_tag("cpu", root=project_copy) == tag
    pins.write_text(pins.read_text().replace("py-spy==", "py-spy==9"))
    pinned_differently = image_tag("cpu", root=project_copy)
    assert pinned_differently != tag
    dockerfile = images / "Dockerfile.cpu"
    dockerfile.write_text(dockerfile.read_text() + "LABEL x=y\n")
    assert image_tag("cpu", root=project_copy) != pinned_differently


def test_image_runs_the_same_torch_and_numpy_as_the_platform() -> None:
    """The process backend runs the venv's packages; a lab must not change behaviour by backend."""
    platform_pins = dict(
        line.split("==", 1) for line in tags.requirement_lines(tags.REPO_ROOT / "requirements.txt") if "==" in line
    )
    for kind in tags.KINDS:
        image_pins = dict(
            line.split("==", 1)
            for line in tags.requirement_lines(tags.REPO_ROOT / "sandbox" / "images" / f"requirements-{kind}.txt")
        )
        assert image_pins["torch"].split("+")[0] == platform_pins["torch"], kind
        assert image_pins["numpy"] == platform_pins["numpy"], kind
        assert "py-spy" in image_pins, kind


def test_cpu_pins_are_complete_and_exact() -> None:
    # Every package the CPU build installs is pinned, or the wheel download would
    # pick whatever is newest and the tag would no longer describe the image.
    lines = tags.requirement_lines(tags.REPO_ROOT / "sandbox" / "images" / "requirements-cpu.txt")
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][^\s;]*", line) for line in lines), lines
    names = {line.split("==")[0].lower().replace("_", "-") for line in lines}
    assert {"torch", "numpy", "py-spy", "filelock", "typing-extensions", "sympy", "networkx", "jinja2"} <= names
    assert any(line.startswith("torch==") and line.endswith("+cpu") for line in lines)


def test_unknown_kind_is_a_one_line_error(project_copy: Path) -> None:
    with pytest.raises(ImageBuildError, match="unknown lab image kind 'tpu'"):
        image_tag("tpu", root=project_copy)


def test_missing_dockerfile_is_a_one_line_error(project_copy: Path) -> None:
    (project_copy / "sandbox" / "images" / "Dockerfile.cpu").unlink()
    with pytest.raises(ImageBuildError) as caught:
        ensure_image("cpu", root=project_copy, progress=lambda line: None)
    message = str(caught.value)
    assert message.startswith("no Dockerfile for the cpu lab image at ")
    assert "\n" not in message


def test_missing_harness_is_a_one_line_error(project_copy: Path) -> None:
    shutil.rmtree(project_copy / "sandbox" / "harness")
    with pytest.raises(ImageBuildError, match=r"harness folder .* is missing"):
        image_tag("cpu", root=project_copy)


def test_missing_engine_is_a_one_line_error(project_copy: Path, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    with pytest.raises(ImageBuildError) as caught:
        ensure_image("cpu", root=project_copy, progress=lambda line: None)
    message = str(caught.value)
    assert message == f"no Docker engine answers at unix://{tmp_path}/absent.sock (no engine listening)"


def test_command_turns_a_build_error_into_a_command_error(project_copy: Path, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(build, "REPO_ROOT", project_copy)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    with pytest.raises(CommandError, match="^no Docker engine answers at "):
        call_command("buildimages", "--kind", "cpu", verbosity=0)


def test_error_messages_are_folded_to_one_line() -> None:
    assert str(ImageBuildError("pip failed:\n  line one\n\tline two")) == "pip failed: line one line two"


def test_failed_step_reports_exit_status_and_last_lines() -> None:
    lines: list[str] = []
    script = "for i in 1 2 3 4 5 6 7; do echo line $i; done; exit 3"
    with pytest.raises(ImageBuildError) as caught:
        build.run_streaming(["sh", "-c", script], lines.append, what="pip install", hint="; try again")
    assert lines == [f"line {i}" for i in range(1, 8)]
    assert str(caught.value) == "pip install failed (exit 3): line 3 | line 4 | line 5 | line 6 | line 7; try again"


def test_bootstrap_without_root_names_the_way_out(monkeypatch) -> None:
    monkeypatch.setattr(build.os, "geteuid", lambda: 1000)
    with pytest.raises(ImageBuildError, match="debootstrap, which needs root"):
        build.bootstrap_base(client=None, progress=lambda line: None)


def test_bootstrap_without_debootstrap_names_the_package(monkeypatch) -> None:
    monkeypatch.setattr(build.os, "geteuid", lambda: 0)
    monkeypatch.setattr(build.shutil, "which", lambda *args, **kwargs: None)
    with pytest.raises(ImageBuildError, match="apt-get install debootstrap$"):
        build.bootstrap_base(client=None, progress=lambda line: None)


def test_debian_mirror_comes_from_the_hosts_apt_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\n"
        "URIs: http://mirror.example.test/debian/\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://mirror.example.test/debian-security\nSuites: bookworm-security\n"
    )
    assert build.debian_mirror(tmp_path) == "http://mirror.example.test/debian"
    (tmp_path / "sources.list").write_text(
        "deb [arch=amd64 signed-by=/k.gpg] http://one.example.test/debian bookworm main\n"
    )
    assert build.debian_mirror(tmp_path) == "http://one.example.test/debian"
    assert build.debian_mirror(tmp_path / "absent") == build.DEFAULT_DEBIAN_MIRROR


def test_context_holds_exactly_the_hashed_harness_files_readable_by_all(project_copy: Path, tmp_path: Path) -> None:
    sources = tags.image_sources("cpu", root=project_copy)
    harness = sources.harness / "faultline_harness"
    (harness / "__pycache__").mkdir()
    (harness / "__pycache__" / "x.pyc").write_bytes(b"")
    (harness / "launch.py").chmod(0o600)
    context = tmp_path / "context"
    context.mkdir()
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "demo-1.0-py3-none-any.whl").write_bytes(b"wheel")
    build.assemble_context(sources, context, wheels)
    copied = sorted(p.relative_to(context).as_posix() for p in context.rglob("*") if p.is_file())
    assert copied == [
        "Dockerfile",
        "harness/faultline_harness/__init__.py",
        "harness/faultline_harness/launch.py",
        "requirements.txt",
        "wheels/demo-1.0-py3-none-any.whl",
    ]
    assert (context / "harness" / "faultline_harness" / "launch.py").stat().st_mode & 0o777 == 0o644


# --- against a real engine ------------------------------------------------------------


@pytest.fixture(scope="session")
def lab_image() -> str:
    """Build (or find) the CPU lab image once for the whole session."""
    lines: list[str] = []
    try:
        return ensure_image("cpu", progress=lines.append)
    except ImageBuildError as exc:
        pytest.fail(f"{exc}\n" + "\n".join(lines[-40:]))


def _run_in(image: str, command: list[str]) -> str:
    """Run ``command`` the way the sandbox does: no network, read-only root, lab user."""
    import docker

    client = docker.from_env()
    try:
        output = client.containers.run(
            image, command, network_mode="none", user=f"{LAB_UID}:{LAB_UID}", read_only=True, remove=True
        )
    finally:
        client.close()
    return output.decode().strip()


@pytest.mark.docker
@pytest.mark.timeout(BUILD_TIMEOUT)
def test_ensure_image_returns_the_current_tag(lab_image: str) -> None:
    assert lab_image == image_tag("cpu")
    lines: list[str] = []
    assert ensure_image("cpu", progress=lines.append) == lab_image
    assert lines == [f"{lab_image} is up to date"]


@pytest.mark.docker
@pytest.mark.timeout(BUILD_TIMEOUT)
def test_torch_numpy_and_harness_import_without_network_on_a_read_only_root(lab_image: str) -> None:
    output = _run_in(lab_image, ["python3", "-c", "import torch, numpy, faultline_harness; print(torch.__version__)"])
    assert output.split("+")[0] == "2.13.0", output


@pytest.mark.docker
@pytest.mark.timeout(BUILD_TIMEOUT)
def test_py_spy_is_installed(lab_image: str) -> None:
    assert _run_in(lab_image, ["py-spy", "--version"]).startswith("py-spy 0.")


@pytest.mark.docker
@pytest.mark.timeout(BUILD_TIMEOUT)
def test_runs_as_the_unprivileged_lab_user_by_default(lab_image: str) -> None:
    import docker

    client = docker.from_env()
    try:
        # No --user here: the image itself must not default to root.
        output = client.containers.run(
            lab_image, ["sh", "-c", "id -u; id -g; pwd; getent passwd lab"], network_mode="none", remove=True
        )
    finally:
        client.close()
    uid, gid, cwd, account = output.decode().split()
    assert (uid, gid, cwd) == (str(LAB_UID), str(LAB_UID), "/work")
    assert account.endswith(":/usr/sbin/nologin")
    assert _run_in(lab_image, ["id", "-u"]) == str(LAB_UID)

import pytest

from sandbox.selection import choose_backend


def test_process_backend_is_labelled_not_isolated(settings):
    settings.SANDBOX_BACKEND = "process"
    choice = choose_backend()
    assert (choice.name, choice.ok) == ("process", True)
    assert "not isolated — single-user use only" in choice.detail


def test_auto_falls_back_to_process_without_an_engine(settings, monkeypatch, tmp_path):
    settings.SANDBOX_BACKEND = "auto"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    choice = choose_backend()
    assert (choice.name, choice.ok) == ("process", True)
    assert "no Docker engine answers" in choice.detail


def test_docker_required_but_absent_is_a_clear_failure(settings, monkeypatch, tmp_path):
    settings.SANDBOX_BACKEND = "docker"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    choice = choose_backend()
    assert (choice.name, choice.ok) == ("docker", False)
    assert "SANDBOX_BACKEND=docker requires it" in choice.detail


@pytest.mark.docker
def test_auto_picks_a_running_docker_engine(settings):
    settings.SANDBOX_BACKEND = "auto"
    choice = choose_backend()
    assert (choice.name, choice.ok) == ("docker", True), choice.detail
    assert choice.detail.startswith("Docker engine ")

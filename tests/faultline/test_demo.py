import json
from unittest import mock

from django.contrib.auth import authenticate
from django.core.management import call_command

from faultline.demo import credentials_file


def test_loaddemo_is_idempotent_and_prints_working_credentials(db, capsys, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    with mock.patch("labs.tasks.validate_pending.apply_async") as queue_validation:
        call_command("loaddemo")
        first = capsys.readouterr().out
        call_command("loaddemo")
        second = capsys.readouterr().out
    assert first == second, "re-running must keep the same accounts and passwords"
    # The catalog is loaded but not validated yet: the worker is asked to validate (and so publish) it.
    assert "Queued validation of" in first
    queue_validation.assert_called_with(kwargs={"seeds": 1}, queue="cpu")
    credentials = json.loads(credentials_file().read_text())
    assert set(credentials) == {"candidate", "interviewer", "author", "admin"}
    for username, password in credentials.items():
        assert f"user {username}" in first and password in first
        user = authenticate(username=username, password=password)
        assert user is not None
    assert authenticate(username="admin", password=credentials["admin"]).is_staff
    assert list(
        authenticate(username="author", password=credentials["author"]).groups.values_list("name", flat=True)
    ) == ["author"]
    assert oct(credentials_file().stat().st_mode & 0o777) == "0o600"
    # The demo interviewer has a loop to start an interview from, made once.
    from interviews.models import InterviewTemplate

    loop = InterviewTemplate.objects.get(owner__username="interviewer")
    assert loop.title in first
    assert [item.kind for item in loop.items.all()] == ["question", "question", "lab"]

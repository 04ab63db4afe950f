import json

from django.contrib.auth import authenticate
from django.core.management import call_command

from faultline.demo import credentials_file


def test_loaddemo_is_idempotent_and_prints_working_credentials(db, capsys, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    call_command("loaddemo")
    first = capsys.readouterr().out
    call_command("loaddemo")
    second = capsys.readouterr().out
    assert first == second, "re-running must keep the same accounts and passwords"
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

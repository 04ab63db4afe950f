from unittest import mock

from sandbox.models import Run, RunDiagnostic, RunLogChunk


def test_author_starts_a_run_from_the_page_and_follows_it(login, author, settings):
    settings.SANDBOX_BACKEND = "process"
    client = login(author)
    page = client.get("/sandbox/").content.decode()
    assert "not isolated — single-user use only" in page
    with mock.patch("sandbox.services.enqueue_run") as enqueue:
        response = client.post("/sandbox/", {"code": "print('hi')", "ranks": 1, "timeout_seconds": 30})
    run = Run.objects.get(owner=author)
    assert response.status_code == 302 and response["Location"] == f"/sandbox/runs/{run.pk}/"
    enqueue.assert_not_called()  # only after commit; the test transaction never commits
    RunLogChunk.objects.create(run=run, seq=1, text="[r0] hi\n")
    live = client.get(f"/sandbox/runs/{run.pk}/live/").content.decode()
    assert "[r0] hi" in live and 'hx-trigger="every 1s"' in live
    Run.objects.filter(pk=run.pk).update(status=Run.Status.PASSED)
    assert 'hx-trigger="every 1s"' not in client.get(f"/sandbox/runs/{run.pk}/live/").content.decode()


def test_bad_form_input_is_explained(login, author):
    response = login(author).post("/sandbox/", {"code": "", "ranks": 99, "timeout_seconds": 1})
    assert response.status_code == 200
    form = response.context["form"]
    assert set(form.errors) == {"code", "ranks", "timeout_seconds"}
    assert not Run.objects.exists()


def test_diagnostics_only_while_running(login, author):
    client = login(author)
    run = Run.objects.create(owner=author, files={"main.py": "x"}, status=Run.Status.QUEUED)
    response = client.post(f"/sandbox/runs/{run.pk}/stacks/", follow=True)
    assert "diagnostics can only be taken while the program runs" in response.content.decode()
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    client.post(f"/sandbox/runs/{run.pk}/stacks/")
    assert RunDiagnostic.objects.get(run=run).kind == "stacks"


def test_other_authors_cannot_see_a_run(login, author):
    from core.roles import Role
    from tests.conftest import make_user

    run = Run.objects.create(owner=author, files={"main.py": "x"})
    other = login(make_user("a2", Role.AUTHOR))
    assert other.get(f"/sandbox/runs/{run.pk}/").status_code == 404
    assert other.post(f"/sandbox/runs/{run.pk}/cancel/").status_code == 404

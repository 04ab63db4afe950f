"""The candidate's lab actions through HTTP: attempts, files, runs, quotas, diagnosis, hints."""

from __future__ import annotations

from unittest import mock

import pytest
from django.test import override_settings

from labs.models import Attempt, LabRun
from labs.render import choose_params
from sandbox.models import Run
from tests.labs.helpers import EXAMPLE, publish

pytestmark = pytest.mark.django_db


def post(client, url: str, data: dict):
    return client.post(url, data, content_type="application/json")


@pytest.fixture
def attempt_url(login, candidate):
    publish()
    client = login(candidate)
    response = client.post(f"/api/labs/{EXAMPLE}/attempts/")
    assert response.status_code == 201, response.content
    return client, f"/api/labs/attempts/{response.json()['id']}/"


def test_unpublished_lab_cannot_be_started(login, candidate):
    response = login(candidate).post(f"/api/labs/{EXAMPLE}/attempts/")
    assert response.status_code == 400
    assert "not published" in response.json()["error"]["message"] + str(response.json()["error"].get("fields"))


def test_catalog_lists_only_published_labs(login, candidate):
    client = login(candidate)
    assert client.get("/api/labs/").json() == []
    publish()
    assert [lab["slug"] for lab in client.get("/api/labs/").json()] == [EXAMPLE]


def test_attempt_has_a_seeded_program_and_no_hidden_answers(attempt_url):
    client, url = attempt_url
    data = client.get(url).json()
    attempt = Attempt.objects.get(pk=data["id"])
    assert data["files"] == attempt.files and "train.py" in data["files"]
    text = str(data)
    assert "fit_input_stats(x)" not in data["files"]["train.py"]  # the fix is not handed out
    assert "unnormalised-inputs" in text  # root-cause options are listed...
    assert "heldout_r2" not in text and "grader" not in text.lower()  # ...the grader is not


def test_other_users_cannot_see_an_attempt(attempt_url, login, interviewer):
    _, url = attempt_url
    assert login(interviewer).get(url).status_code == 404


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"../escape.py": "x"}, "'../escape.py': a file name must stay inside the program folder"),
        ({"train.py": "x", "a\x00.py": "x"}, "'a\\x00.py': control characters"),
        ({"train.py": "x", "two\nlines.py": "x"}, "'two\\nlines.py': control characters"),
        ({"train.py": "x", "sub\\x.py": "x"}, "a backslash is not allowed"),
        ({"train.py": "x", "/abs.py": "x"}, "'/abs.py': a file name must be relative"),
        ({"train.py": "x", "a/./b.py": "x"}, "'.' parts"),
        ({"train.py": "x", "n" * 201 + ".py": "x"}, "at most 200 characters, this one has 204"),
        ({"train.py": "x", "data.bin": "x"}, "only text files"),
        ({"model.py": "x"}, "entry point train.py cannot be removed"),
        ({"train.py": "a\x00b"}, "Null characters are not allowed"),
    ],
)
def test_bad_files_are_refused_with_the_reason(attempt_url, files, message):
    client, url = attempt_url
    response = client.put(url + "files/", {"files": files}, content_type="application/json")
    assert response.status_code == 400
    assert any(message in text for text in texts(response.json())), response.json()


def texts(value) -> list[str]:
    """Every string inside a JSON answer, as the page would show it."""
    if isinstance(value, dict):
        return [t for v in value.values() for t in texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in texts(v)]
    return [value] if isinstance(value, str) else []


def test_save_and_reset_files(attempt_url):
    client, url = attempt_url
    original = client.get(url).json()["files"]
    edited = {**original, "train.py": original["train.py"] + "\n# edited\n"}
    assert client.put(url + "files/", {"files": edited}, content_type="application/json").status_code == 200
    assert client.get(url).json()["files"]["train.py"].endswith("# edited\n")
    client.put(url + "files/", {"reset": True}, content_type="application/json")
    assert client.get(url).json()["files"] == original


def test_one_active_run_and_an_hourly_quota(attempt_url):
    client, url = attempt_url
    with mock.patch("sandbox.services.enqueue_run"):
        first = client.post(url + "runs/", {}, content_type="application/json")
        assert first.status_code == 201
        second = client.post(url + "runs/", {}, content_type="application/json")
        assert second.status_code == 400 and "already have a run in progress" in str(second.json())
        # A run the platform failed does not count against the candidate.
        Run.objects.update(status=Run.Status.ERROR)
        with override_settings(LAB_RUNS_PER_HOUR=1):
            assert client.post(url + "runs/", {}, content_type="application/json").status_code == 201
            Run.objects.update(status=Run.Status.FAILED)
            refused = client.post(url + "runs/", {}, content_type="application/json")
    assert refused.status_code == 400 and "lab runs for this hour" in str(refused.json())


def test_fix_runs_carry_hidden_files_and_a_nonce_plain_runs_do_not(attempt_url):
    client, url = attempt_url
    with mock.patch("sandbox.services.enqueue_run"):
        run_id = client.post(url + "runs/", {"toggles": ["detect_anomaly"]}, content_type="application/json").json()[
            "id"
        ]
    lab_run = LabRun.objects.get(pk=run_id)
    assert lab_run.run.purpose == "run" and lab_run.run.env == {"FAULTLINE_DETECT_ANOMALY": "1"}
    refused = client.post(url + "runs/", {"toggles": ["nccl_debug"]}, content_type="application/json")
    assert refused.status_code == 400


def test_diagnosis_is_scored_with_an_explanation(attempt_url):
    client, url = attempt_url
    short = client.post(
        url + "diagnosis/", {"root_cause": "bad-init", "evidence": "dunno"}, content_type="application/json"
    )
    assert short.status_code == 400 and "20 characters" in str(short.json())
    wrong = client.post(
        url + "diagnosis/",
        {"root_cause": "bad-init", "evidence": "The init looks odd to me, probably random."},
        content_type="application/json",
    ).json()["diagnosis"]
    # The rubric's variant point wants this attempt's own input scale, as its train.py shows it.
    attempt = Attempt.objects.get(pk=url.rstrip("/").rsplit("/", 1)[1])
    scale = choose_params(EXAMPLE, attempt.version.spec["params"], attempt.seed)["scale"]
    good = client.post(
        url + "diagnosis/",
        {"root_cause": "unnormalised-inputs", "evidence": (
            "The loss and the gradient norm explode for a few steps, then NaN. The inputs are raw units with a large "
            f"scale (make_data(scale={scale})) and are never normalized (fit_input_stats is not called), so this "
            "learning rate diverges."
        )},
        content_type="application/json",
    ).json()["diagnosis"]  # fmt: skip
    assert wrong["score"] < 50 <= good["score"]
    assert good["detail"]["root_cause_correct"] and good["detail"]["evidence_percent"] == 100
    zh = client.post(
        url + "diagnosis/",
        {
            "root_cause": "unnormalised-inputs",
            "evidence": f"损失和梯度范数先爆炸再变成 NaN；输入数值很大（scale={scale}），"
            "没有做标准化，学习率相对太大。",
        },
        content_type="application/json",
    ).json()["diagnosis"]
    assert zh["detail"]["evidence_percent"] == 100


def test_hints_open_in_order_and_cost_points(attempt_url):
    client, url = attempt_url
    assert client.post(url + "hints/1/").status_code == 400
    data = client.post(url + "hints/0/").json()
    assert data["hints"][0]["text"] and data["hints"][1]["text"] is None
    assert data["score"]["hints"] == 5


@pytest.mark.parametrize(
    ("ending", "losses", "expected"),
    [
        ({"status": Run.Status.PASSED, "exit_code": 0, "exit_codes": {"0": 0}}, [0.5, 0.4], "finished"),
        (
            {"status": Run.Status.PASSED, "exit_code": 0, "exit_codes": {"0": 0}},
            [0.5, "nan"],
            "finished with non-finite loss",
        ),
        (
            {"status": Run.Status.FAILED, "exit_code": 1, "exit_codes": {"0": 0, "1": 1}},
            [0.5],
            "crashed (exit 1 on rank 1)",
        ),
        ({"status": Run.Status.FAILED, "timed_out": True}, [0.5], "timed out"),
        ({"status": Run.Status.FAILED, "oom_killed": True, "exit_code": 137}, [], "OOM-killed"),
        ({"status": Run.Status.CANCELLED}, [], "cancelled"),
    ],
)
def test_a_run_says_what_happened_and_never_passed(attempt_url, ending, losses, expected):
    client, url = attempt_url
    with mock.patch("sandbox.services.enqueue_run"):
        run_id = client.post(url + "runs/", {}, content_type="application/json").json()["id"]
    run = LabRun.objects.get(pk=run_id).run
    for seq, loss in enumerate(losses):
        run.events.create(seq=seq, kind="metric", rank=0, t=seq, data={"step": seq, "loss": loss})
    Run.objects.filter(pk=run.pk).update(**ending)
    data = client.get(url + f"runs/{run_id}/").json()
    assert data["outcome"] == expected
    assert "passed" not in data["outcome"]
    listed = client.get(url + "runs/").json()
    assert [r["outcome"] for r in listed if r["id"] == run_id] == [expected]


def test_run_outcome_is_translated(attempt_url):
    client, url = attempt_url
    with mock.patch("sandbox.services.enqueue_run"):
        run_id = client.post(url + "runs/", {}, content_type="application/json").json()["id"]
    Run.objects.filter(pk=LabRun.objects.get(pk=run_id).run_id).update(status=Run.Status.FAILED, timed_out=True)
    data = client.get(url + f"runs/{run_id}/", HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert data["outcome"] == "超时"


def test_the_diagnosis_being_written_is_kept_but_not_scored(attempt_url):
    client, url = attempt_url
    response = client.put(url + "diagnosis/draft/", {"root_cause": "bad-labels", "evidence": "loss is NaN at"},
                          content_type="application/json")  # fmt: skip
    assert response.status_code == 200, response.content
    attempt = client.get(url).json()
    assert attempt["diagnosis"]["draft"]["evidence"] == "loss is NaN at"
    assert attempt["diagnosis"]["score"] is None and attempt["diagnosis"]["root_cause"] == ""
    # The workspace shows the draft again after a reload.
    page = client.get(url.replace("/api/labs/", "/labs/")).content.decode()
    assert "loss is NaN at</textarea>" in page and 'value="bad-labels" checked' in page
    bad = client.put(url + "diagnosis/draft/", {"root_cause": "no-such-cause", "evidence": ""},
                     content_type="application/json")  # fmt: skip
    assert bad.status_code == 400 and "root_cause" in str(bad.json()["error"]["fields"])


def fields(response) -> dict:
    return response.json()["error"]["fields"]


def test_a_plain_run_pauses_where_asked_and_says_so_in_both_languages(attempt_url):
    client, url = attempt_url
    refused = post(client, url + "runs/", {"pause": {"at_step": -1}})
    assert refused.status_code == 400 and "pause.at_step: a whole number" in fields(refused)["pause"][0]
    refused = post(client, url + "runs/", {"fix": True, "pause": {"at_step": 3}})
    assert refused.status_code == 400 and "a fix is graded straight through" in fields(refused)["pause"][0]
    with mock.patch("sandbox.services.enqueue_run"):
        created = post(client, url + "runs/", {"pause": {"at_step": 3, "on_nonfinite": True, "memory_mib": None}})
    assert created.status_code == 201, created.content
    lab_run = LabRun.objects.get(pk=created.json()["id"])
    run = lab_run.run
    assert run.control == {"at_step": 3, "on_nonfinite": True} and created.json()["paused"] is None

    assert post(client, url + f"runs/{lab_run.pk}/pause/", {}).status_code == 202
    assert post(client, url + f"runs/{lab_run.pk}/step/", {}).status_code == 202
    run.refresh_from_db()
    assert run.control == {"at_step": 3, "on_nonfinite": True, "now": 1, "release": 1, "step": True}
    assert run.control_rev == 2

    # The ranks' own reports say where they are held: rank 1 was let go, rank 0 still waits.
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    for seq, (kind, rank, data) in enumerate(
        [("paused", 0, {"step": 3, "reason": "at step 3, first non-finite loss"}),
         ("paused", 1, {"step": 3, "reason": "another rank paused"}),
         ("resumed", 1, {"step": 3, "how": "resume"})],
        start=1,
    ):  # fmt: skip
        run.events.create(seq=seq, kind=kind, rank=rank, t=float(seq), data={"kind": kind, **data})
    data = client.get(url + f"runs/{lab_run.pk}/").json()
    assert data["paused"] == {"step": 3, "reason": "at step 3, first non-finite loss", "ranks": [0]}
    assert data["stage"].startswith("paused at step 3 (step 3 reached, first non-finite loss)")
    data = client.get(url + f"runs/{lab_run.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert data["stage"].startswith("已在第 3 步暂停（到达第 3 步, 首个非有限损失）")

    Run.objects.filter(pk=run.pk).update(status=Run.Status.PASSED)
    gone = post(client, url + f"runs/{lab_run.pk}/resume/", {})
    assert gone.status_code == 400 and "not running any more" in fields(gone)["action"][0]
    assert client.get(url + f"runs/{lab_run.pk}/").json()["paused"] is None

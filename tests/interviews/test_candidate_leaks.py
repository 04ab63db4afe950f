"""What the candidate of an interview can reach, walked link by link, never holds what only interviewers see.

The walk starts where the invitation link lands and follows every same-site link, form, script data
address and API endpoint the pages name, as the candidate's link session, during the interview (a question
drafted, the lab opened, a run, a graded fix, a diagnosis, a released hint) and after it. Every response is
searched for the question's reference answer and rubric, and for the lab's solution, hidden files, grader,
cover-up fixes and notes, diagnosis rubric, correct root cause's rubric texts and unreleased hints.
"""

from __future__ import annotations

import html
import re
from collections import deque
from urllib.parse import urljoin, urlparse

import pytest
from django.utils import timezone

from interviews import clock, scheduling, steering, taking
from interviews.models import Interview
from labs import services as lab_services
from labs.models import LabRun
from labs.render import choose_params, render_files

pytestmark = pytest.mark.django_db
ATTRIBUTE_URL = re.compile(r'(?:href|src|action|data-[\w-]*(?:url|api)[\w-]*)="([^"]+)"')
MIN_FRAGMENT = 24
CODE_FRAGMENT = 12


def _fragments(text: str, shortest: int = MIN_FRAGMENT) -> set[str]:
    """Distinctive pieces of a secret: its lines and sentences long enough not to occur by chance."""
    pieces = set()
    for line in text.splitlines():
        for part in re.split(r"(?<=[.。；;!?！？])\s*", line):
            part = _normalised(part)
            if len(part) >= shortest:
                pieces.add(part)
    return pieces


def _secrets(question, version, seed: int) -> dict[str, set[str]]:
    spec = version.spec
    values = choose_params(spec["slug"], spec["params"], seed)
    # The candidate's own program is on their screen: a line of a secret file that also occurs in it is no secret.
    visible = _normalised("\n".join(render_files(spec["program"], values).values()))

    def new_lines(files: dict[str, str]) -> set[str]:
        # A fix is often one short line (``net.fit_input_stats(x)``): code lines count from 12 characters.
        return {p for text in files.values() for p in _fragments(text, CODE_FRAGMENT) if p not in visible}

    found = {
        "reference answer": _fragments(question.answer_en) | _fragments(question.answer_zh),
        "rubric": {p for point in question.rubric.all() for p in _fragments(point.text_en) | _fragments(point.text_zh)},
        "solution": new_lines(render_files(spec["solution"], values)),
        "hidden files": new_lines(lab_services.hidden_files(spec, seed, values)),
        "grader": new_lines({"grader.py": spec["grader_source"]}),
        "cover-up fixes": set().union(*(new_lines(render_files(f, values)) for f in spec["bad_fixes"].values())),
        "cover-up notes": {p for note in spec["bad_fix_notes"].values() for t in note.values() for p in _fragments(t)},
        "diagnosis rubric": {
            p for point in spec["diagnosis"]["rubric"] for p in _fragments(point["en"]) | _fragments(point["zh"])
        },
        "unreleased hints": {p for hint in spec["hints"][1:] for p in _fragments(hint["en"]) | _fragments(hint["zh"])},
    }
    assert found["reference answer"] and found["rubric"] and found["solution"] and found["grader"], found
    return found


def _normalised(body: str) -> str:
    return " ".join(re.sub(r"[*_`#>|-]+", " ", body).split())


def _walk(client, start: list[str], allowed_prefixes: tuple[str, ...]) -> dict[str, str]:
    """Breadth-first GET of every same-site address the responses name, within the candidate's area."""
    seen: dict[str, str] = {}
    queue = deque(start)
    while queue and len(seen) < 200:
        url = queue.popleft()
        path = urlparse(url).path
        if path in seen or not path.startswith(allowed_prefixes):
            continue
        response = client.get(path)
        body = html.unescape(response.content.decode("utf-8", "replace"))
        seen[path] = body
        if response.status_code >= 300:
            continue
        for link in ATTRIBUTE_URL.findall(body):
            target = urljoin(path, link)
            if urlparse(target).netloc in ("", "testserver") and not link.startswith(("#", "javascript:")):
                queue.append(urlparse(target).path)
    return seen


def test_nothing_an_interviewer_sees_reaches_the_candidate(client, make_interview, interviewer):
    interview = make_interview(by_email=True)
    _invitation, link = scheduling.invite(interview, interviewer, "http://testserver/")
    assert client.get(urlparse(link).path).status_code == 200
    assert client.post(urlparse(link).path).status_code == 302
    interview = taking.start(Interview.objects.get(pk=interview.pk))
    question_item = interview.items.get(kind="question")
    lab_item = taking.open_item(interview.items.get(kind="lab"))
    attempt = lab_item.attempt
    taking.autosave(question_item, "The collective blocks until every rank joins; a missing rank hangs the rest.")
    steering.release_hint(interview, lab_item, interviewer)  # hint 0 is released, the others are not
    lab_services.start_run(attempt)
    LabRun.objects.filter(attempt=attempt).update(graded_at=timezone.now())  # let the run list show up
    options = attempt.version.spec["diagnosis"]["options"]
    client.post(
        f"/api/labs/attempts/{attempt.pk}/diagnosis/",
        {"root_cause": options[0]["key"], "evidence": "the gradient norm grows for a few steps before the NaN"},
        content_type="application/json",
    )
    secrets = _secrets(question_item.question, attempt.version, attempt.seed)
    areas = (f"/interviews/take/{interview.pk}/", f"/api/interviews/take/{interview.pk}/",
             f"/labs/attempts/{attempt.pk}/", f"/api/labs/attempts/{attempt.pk}/")  # fmt: skip
    start = [
        f"/interviews/take/{interview.pk}/",
        f"/api/interviews/take/{interview.pk}/",
        f"/interviews/take/{interview.pk}/items/{question_item.pk}/",
        f"/labs/attempts/{attempt.pk}/",
        f"/labs/attempts/{attempt.pk}/diff/",
        f"/api/labs/attempts/{attempt.pk}/",
        f"/api/labs/attempts/{attempt.pk}/timeline/",
        f"/api/labs/attempts/{attempt.pk}/runs/",
    ]
    during = _walk(client, start, areas)
    assert len(during) >= len(start), sorted(during)
    clock.finish(Interview.objects.get(pk=interview.pk))
    after = _walk(client, start, areas)
    for phase, pages in (("during", during), ("after", after)):
        for path, body in pages.items():
            text = _normalised(body)
            for kind, pieces in secrets.items():
                for piece in pieces:
                    assert piece not in text, f"{phase} the interview, {path} shows the {kind}: {piece!r}"
    # The same search finds the secrets where they belong: on the interviewers' scoring page.
    client.force_login(interviewer)
    scoring_page = _normalised(html.unescape(client.get(f"/interviews/{interview.pk}/score/").content.decode()))
    assert any(piece in scoring_page for piece in secrets["reference answer"])
    assert any(piece in scoring_page for piece in secrets["rubric"])

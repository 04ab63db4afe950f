"""Every form control on the candidate's pages has an accessible name, and no control submits on change.

A screen reader announces a control by its label (a <label for>, a wrapping <label>, aria-label or
aria-labelledby; for buttons, their text). This walks the rendered HTML of the pages a candidate
uses, workspace included.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from tests.labs.helpers import EXAMPLE, publish

pytestmark = pytest.mark.django_db
CONTROLS = {"input", "select", "textarea", "button"}
UNNAMED_TYPES = {"hidden", "submit", "button"}


class Controls(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.controls: list[dict] = []
        self.label_for: set[str] = set()
        self.ids: set[str] = set()
        self.open_labels = 0
        self.open_button: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "label":
            self.open_labels += 1
            if attrs.get("for"):
                self.label_for.add(attrs["for"])
        if tag in CONTROLS:
            control = {"tag": tag, "attrs": attrs, "in_label": self.open_labels > 0, "text": ""}
            self.controls.append(control)
            if tag == "button":
                self.open_button = control

    def handle_endtag(self, tag):
        if tag == "label":
            self.open_labels -= 1
        if tag == "button":
            self.open_button = None

    def handle_data(self, data):
        if self.open_button is not None:
            self.open_button["text"] += data.strip()


def unnamed(html: str) -> list[str]:
    parser = Controls()
    parser.feed(html)
    problems = []
    for c in parser.controls:
        attrs = c["attrs"]
        if "onchange" in attrs:
            problems.append(f"{c['tag']} {attrs} acts on change")
        if c["tag"] == "input" and attrs.get("type") in UNNAMED_TYPES - {"submit", "button"}:
            continue
        named = (
            c["in_label"]
            or attrs.get("aria-label")
            or attrs.get("aria-labelledby") in parser.ids
            or attrs.get("id") in parser.label_for
            or attrs.get("title")
            or (c["tag"] == "button" and c["text"])
            or (c["tag"] == "input" and attrs.get("type") in {"submit", "button"} and attrs.get("value"))
        )
        if not named:
            problems.append(f"{c['tag']} {attrs} has no accessible name")
    return problems


def test_candidate_pages_name_every_control(login, candidate):
    lab = publish()
    client = login(candidate)
    attempt = client.post(f"/api/labs/{EXAMPLE}/attempts/").json()["id"]
    question = lab.questions.first().slug
    pages = ["/", "/questions/", f"/questions/{question}/", "/labs/", f"/labs/{EXAMPLE}/", f"/labs/attempts/{attempt}/"]
    for language in ("en", "zh-hans"):
        for url in pages:
            response = client.get(url, HTTP_ACCEPT_LANGUAGE=language)
            assert response.status_code == 200, url
            assert unnamed(response.content.decode()) == [], f"{url} ({language})"


def test_the_check_finds_an_unnamed_select():
    assert unnamed('<form><select name="x" onchange="this.form.submit()"></select></form>') == [
        "select {'name': 'x', 'onchange': 'this.form.submit()'} acts on change",
        "select {'name': 'x', 'onchange': 'this.form.submit()'} has no accessible name",
    ]
    assert unnamed('<label for="a">A</label><select id="a"></select><button>Go</button>') == []

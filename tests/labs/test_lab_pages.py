"""Question pages link to their labs, and a lab a fresh server has not proven yet says so."""

from __future__ import annotations

import re

import pytest

from labs.loader import refresh_question_links
from labs.models import Lab
from tests.labs.helpers import EXAMPLE, publish

pytestmark = pytest.mark.django_db


def lab_links(html: str) -> list[str]:
    return re.findall(r'href="(/labs/[^"#]*)"', html)


def test_question_links_open_the_lab(login, candidate):
    lab = publish()
    refresh_question_links()  # as validatelab does when it publishes
    question = lab.questions.first()
    client = login(candidate)
    html = client.get(f"/questions/{question.slug}/").content.decode()
    assert f"/labs/{EXAMPLE}/" in lab_links(html)
    page = client.get(f"/labs/{EXAMPLE}/")
    assert page.status_code == 200
    assert "Start a new attempt" in page.content.decode()


def test_every_question_lab_link_names_a_catalog_lab(login, candidate):
    for lab in Lab.objects.all():
        publish(lab.slug)
    refresh_question_links()
    client = login(candidate)
    slugs = set(Lab.objects.values_list("slug", flat=True))
    linked = 0
    for lab in Lab.objects.all():
        for question in lab.questions.all():
            for href in lab_links(client.get(f"/questions/{question.slug}/").content.decode()):
                if href.count("/") == 3:  # /labs/<slug>/
                    assert href.split("/")[2] in slugs, href
                    linked += 1
    assert linked >= Lab.objects.count()


def test_an_unvalidated_lab_explains_itself(login, candidate):
    response = login(candidate).get(f"/labs/{EXAMPLE}/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "This lab is not open yet" in html and EXAMPLE in html
    assert "Start a new attempt" not in html
    zh = login(candidate).get(f"/labs/{EXAMPLE}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "该实验尚未开放" in zh

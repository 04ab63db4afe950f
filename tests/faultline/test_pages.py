import pytest
from django.test import Client


def test_home_page_for_anonymous_visitors(client, db):
    html = client.get("/").content.decode()
    assert "Debug real AI infrastructure" in html
    assert 'href="/accounts/login/"' in html and 'href="/accounts/signup/"' in html


def test_custom_404_page(client, db, settings):
    settings.DEBUG = False
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert "Page not found" in response.content.decode()


def test_custom_500_page_says_the_fault_is_ours(db, settings, monkeypatch):
    settings.DEBUG = False

    def explode(request):
        raise RuntimeError("boom")

    monkeypatch.setattr("faultline.views.render", lambda *a, **k: explode(None))
    client = Client(raise_request_exception=False)
    response = client.get("/")
    assert response.status_code == 500
    html = response.content.decode()
    assert "no attempt or run counts against you" in html


@pytest.mark.parametrize("path", ["/static/css/faultline.css", "/static/vendor/htmx/htmx.min.js"])
def test_static_files_are_served(client, db, path):
    response = client.get(path)
    assert response.status_code == 200


@pytest.mark.parametrize(("language", "title"), [("en", "Bad request"), ("zh-hans", "请求有误")])
def test_custom_400_page_in_both_languages(db, settings, language, title):
    settings.DEBUG = False
    response = Client().get("/", HTTP_HOST="not-this-site.example", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 400
    assert title in response.content.decode()


@pytest.mark.parametrize(("language", "title"), [("en", "Page not found"), ("zh-hans", "页面不存在")])
def test_custom_404_page_in_both_languages(db, settings, language, title):
    settings.DEBUG = False
    response = Client().get("/no/such/page/", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 404 and title in response.content.decode()

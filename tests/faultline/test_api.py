import json
import re

from django.utils import translation
from rest_framework.authtoken.models import Token

from tests.conftest import PASSWORD


def test_me_with_session(login, interviewer):
    body = login(interviewer).get("/api/me/").json()
    assert body == {"username": "intv", "roles": ["interviewer"], "is_staff": False}


def test_token_auth_round_trip(client, candidate):
    response = client.post("/api/auth/token/", {"username": "cand", "password": PASSWORD})
    assert response.status_code == 200
    token = response.json()["token"]
    assert Token.objects.get(user=candidate).key == token
    body = client.get("/api/me/", HTTP_AUTHORIZATION=f"Token {token}").json()
    assert body["roles"] == ["candidate"]


def test_errors_share_one_body_shape(client, db):
    response = client.get("/api/me/")
    assert response.status_code == 403
    assert response.json() == {
        "error": {
            "status": 403,
            "code": "not_authenticated",
            "message": "Authentication credentials were not provided.",
        }
    }
    response = client.get("/api/me/", HTTP_AUTHORIZATION="Token not-a-token")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "authentication_failed"


def test_validation_errors_list_fields(client, db):
    response = client.post("/api/auth/token/", {"username": "", "password": ""})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert set(error["fields"]) == {"username", "password"}


def test_openapi_schema_and_docs_page(login, candidate):
    client = login(candidate)
    schema = client.get("/api/schema/?format=json").json()
    assert schema["info"]["title"] == "Faultline API"
    assert "/api/me/" in schema["paths"] and "/api/sandbox/status/" in schema["paths"]
    docs = client.get("/api/docs/").content.decode()
    # Swagger UI is served from our own static files, never a CDN.
    assert "/static/vendor/swagger-ui/swagger-ui-bundle.js" in docs
    # Every script and stylesheet is local: no src/href points off the site (a random
    # CSRF token may well contain the letters "cdn", so look at URLs, not words).
    external = re.findall(r'(?:src|href)=["\'](?:https?:)?//[^"\']+', docs)
    assert external == []


def test_error_messages_follow_the_language(login, candidate):
    response = login(candidate).get("/api/sandbox/status/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 403
    assert response.json()["error"]["message"] == "你的账号没有调用此接口所需的角色。"


def test_an_oversized_body_is_refused_as_json_with_the_limit(login, candidate, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1048576
    body = '{"files": {"train.py": "' + "x" * (3 * 1048576) + '"}}'
    response = login(candidate).put("/api/labs/attempts/1/files/", body, content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == "too_large"
    assert "the limit is 2.0 MiB (2097152 bytes)" in error["message"]
    assert "3.0 MiB" in error["message"]
    # Refused before the locale middleware runs, it still answers in the request's language, whatever
    # language the worker's thread served last.
    with translation.override("zh-hans"):
        zh = login(candidate).put(
            "/api/labs/attempts/1/files/", body, content_type="application/json", HTTP_ACCEPT_LANGUAGE="zh-hans"
        )
        en = login(candidate).put(
            "/api/labs/attempts/1/files/", body, content_type="application/json", HTTP_ACCEPT_LANGUAGE="en"
        )
    assert "上限为 2.0 MiB" in zh.json()["error"]["message"]
    assert "the limit is 2.0 MiB" in en.json()["error"]["message"]


def test_a_body_too_large_without_a_length_is_json_too(rf, settings):
    from django.core.exceptions import RequestDataTooBig

    from faultline.api.middleware import ApiJsonErrors

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    middleware = ApiJsonErrors(lambda request: None)
    response = middleware.process_exception(rf.post("/api/labs/"), RequestDataTooBig())
    assert response.status_code == 413
    assert "limit of 1.0 KiB (1024 bytes)" in json.loads(response.content)["error"]["message"]
    assert middleware.process_exception(rf.post("/labs/"), RequestDataTooBig()) is None


def test_errors_outside_the_views_are_json(login, candidate, client, db):
    missing = login(candidate).get("/api/no-such-endpoint/")
    assert missing.status_code == 404
    assert missing.json()["error"] == {
        "status": 404, "code": "not_found", "message": "There is no API endpoint at this address."
    }  # fmt: skip
    # A page outside the API keeps its HTML error page.
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and not page["Content-Type"].startswith("application/json")

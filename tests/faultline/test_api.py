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
    assert "cdn" not in docs.lower()


def test_error_messages_follow_the_language(login, candidate):
    response = login(candidate).get("/api/sandbox/status/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 403
    assert response.json()["error"]["message"] == "你的账号没有调用此接口所需的角色。"

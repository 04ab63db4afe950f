import pytest
from django.contrib.auth.models import User

from tests.conftest import PASSWORD


def signup(client, username="newbie", email="newbie@example.test", password="Unusual-Pass-9941"):
    return client.post(
        "/accounts/signup/",
        {"username": username, "email": email, "password1": password, "password2": password},
    )


def test_signup_creates_a_logged_in_candidate(client, db):
    response = signup(client)
    assert response.status_code == 302
    user = User.objects.get(username="newbie")
    assert list(user.groups.values_list("name", flat=True)) == ["candidate"]
    page = client.get("/").content.decode()
    assert "newbie" in page and "Welcome to Faultline, newbie." in page


def test_signup_rejects_bad_input_with_field_errors(client, db):
    signup(client, username="taken")
    client.logout()
    response = signup(client, username="taken", email="other@example.test", password="short")
    assert response.status_code == 200
    form = response.context["form"]
    assert "username" in form.errors and "password2" in form.errors
    response = signup(client, username="another", email="NEWBIE@example.test")
    assert response.context["form"].errors["email"] == ["An account with this email already exists."]
    assert User.objects.count() == 1


def test_signup_can_be_switched_off(client, db, settings):
    settings.SIGNUP_ENABLED = False
    assert client.get("/accounts/signup/").status_code == 403
    assert signup(client).status_code == 403
    assert not User.objects.exists()
    assert "/accounts/signup/" not in client.get("/").content.decode()


def test_login_logout_and_password_change(client, candidate):
    response = client.post("/accounts/login/", {"username": "cand", "password": "wrong"})
    assert response.status_code == 200 and "correct username and password" in response.content.decode()
    response = client.post("/accounts/login/", {"username": "cand", "password": PASSWORD})
    assert response.status_code == 302
    response = client.post(
        "/accounts/password_change/",
        {"old_password": PASSWORD, "new_password1": "Another-Long-Pass-77", "new_password2": "Another-Long-Pass-77"},
    )
    assert response.status_code == 302 and response["Location"] == "/accounts/password_change/done/"
    client.post("/accounts/logout/")
    assert client.get("/questions/").status_code == 302
    assert client.login(username="cand", password="Another-Long-Pass-77")


@pytest.mark.parametrize("path", ["/accounts/login/", "/accounts/signup/"])
def test_auth_pages_render(client, db, path):
    assert client.get(path).status_code == 200

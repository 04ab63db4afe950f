import pytest
from django.contrib.auth.models import Group

from core.roles import Role

PAGES = {"/questions/": (), "/labs/": (), "/interviews/": (Role.INTERVIEWER,), "/sandbox/": (Role.AUTHOR,)}


@pytest.mark.django_db(serialized_rollback=True)
def test_migration_creates_the_three_roles():
    assert set(Group.objects.values_list("name", flat=True)) >= {"candidate", "interviewer", "author"}


@pytest.mark.parametrize("path", PAGES)
def test_anonymous_users_are_sent_to_login(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith(f"/accounts/login/?next={path}")


@pytest.mark.parametrize("fixture", ["candidate", "interviewer", "author", "staff_admin"])
@pytest.mark.parametrize("path,needed", PAGES.items())
def test_pages_enforce_roles(request, login, fixture, path, needed):
    user = request.getfixturevalue(fixture)
    client = login(user)
    allowed = not needed or user.is_staff or user.groups.filter(name__in=needed).exists()
    response = client.get(path)
    assert response.status_code == (200 if allowed else 403)
    if not allowed:
        assert "Not allowed" in response.content.decode()


def test_navigation_shows_only_what_the_role_may_use(login, candidate, interviewer, author, staff_admin):
    def nav(user):
        html = login(user).get("/").content.decode()
        return {
            label for label in ("Question bank", "Labs", "Interviews", "Authoring", "Admin") if f">{label}</a>" in html
        }

    assert nav(candidate) == {"Question bank", "Labs"}
    assert nav(interviewer) == {"Question bank", "Labs", "Interviews"}
    assert nav(author) == {"Question bank", "Labs", "Authoring"}
    assert nav(staff_admin) == {"Question bank", "Labs", "Interviews", "Authoring", "Admin"}


def test_api_enforces_roles(client, login, candidate, author):
    assert client.get("/api/sandbox/status/").status_code == 403  # anonymous: no credentials
    response = login(candidate).get("/api/sandbox/status/")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    response = login(author).get("/api/sandbox/status/")
    assert response.status_code == 200
    assert response.json()["backend"] in {"docker", "process"}


def test_admin_site_is_staff_only(login, author, staff_admin):
    assert login(author).get("/admin/").status_code == 302
    assert login(staff_admin).get("/admin/").status_code == 200

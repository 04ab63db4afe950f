import pytest
from playwright.sync_api import expect

from core.roles import Role
from tests.conftest import PASSWORD, make_user
from tests.e2e.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NAV = {
    "cand": (Role.CANDIDATE, ["Question bank", "Labs"]),
    "intv": (Role.INTERVIEWER, ["Question bank", "Labs", "Interviews"]),
    "auth": (Role.AUTHOR, ["Question bank", "Labs", "Authoring"]),
}


@pytest.mark.parametrize("username", NAV)
def test_each_role_sees_its_navigation(page, username):
    role, expected = NAV[username]
    make_user(username, role)
    log_in(page, username, PASSWORD)
    nav = page.get_by_role("navigation", name="Main")
    links = nav.locator("ul a").all_inner_texts()
    assert links == [*expected, "API"]
    expect(page.get_by_test_id("current-user")).to_contain_text(username)
    first_area = expected[-1]
    nav.get_by_role("link", name=first_area).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(first_area)


def test_candidate_is_refused_interviewer_and_author_pages(page):
    make_user("cand", Role.CANDIDATE)
    log_in(page, "cand", PASSWORD)
    for path in ("/interviews/", "/sandbox/", "/author/", "/author/labs/", "/author/questions/"):
        response = page.goto(path)
        assert response.status == 403
        expect(page.get_by_role("heading", level=1)).to_contain_text("Not allowed")


def test_language_switch_and_home_screenshots(page, screenshot_dir):
    page.goto("/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Debug real AI infrastructure, not trivia.")
    page.screenshot(path=str(screenshot_dir / "home-en.png"), full_page=True)
    with page.expect_navigation():
        page.get_by_role("button", name="简体中文").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("排查真实的 AI 基础设施问题，而不是背八股。")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    page.screenshot(path=str(screenshot_dir / "home-zh.png"), full_page=True)
    page.goto("/accounts/login/")
    expect(page.get_by_role("heading", level=1)).to_have_text("登录")
    assert (screenshot_dir / "home-zh.png").stat().st_size > 10_000


def test_signup_then_logout(page):
    page.goto("/accounts/signup/")
    page.get_by_label("Username").fill("newcomer")
    page.get_by_label("Email").fill("newcomer@example.test")
    page.get_by_label("Password", exact=True).fill("Unusual-Pass-9941")
    page.get_by_label("Password confirmation").fill("Unusual-Pass-9941")
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("status")).to_contain_text("Welcome to Faultline, newcomer.")
    expect(page.get_by_test_id("current-user")).to_contain_text("candidate")
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("You are logged out")

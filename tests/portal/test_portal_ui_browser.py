"""The portal's pages as a user sees them (issue 28, portal items 5, 6, 8, 9), in real headless
Chromium against gunicorn: a reload after creating a key, confirmations of revoke and rotate,
the layout at 1280 px and on a 390 px phone, the terms page, portal 404s, plan marks in the
console, the plan page and an upgrade request that reaches the admin view and the operator's
mailbox. Screenshots of the pages go to /tmp/portal-shots/ (1280 px and 390 px)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.browser import chromium
from tests.fixtures_live import free_port, start_gunicorn, stop
from tests.portal.test_pages import PASSWORD, make_user
from tests.portal.test_portal_browser import portal_server  # noqa: F401  (the gunicorn fixture)

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.slow]
SHOTS = Path("/tmp/portal-shots")
WIDE, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator:
    with chromium() as launched:
        yield launched


def signed_in(browser, base: str, email: str, viewport: dict[str, int] = WIDE):
    """A new page of a new browser context, signed in as ``email``."""
    page = browser.new_context(viewport=viewport).new_page()
    page.goto(f"{base}/portal/login")
    page.fill("#email", email)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]:has-text('Sign in')")
    page.wait_for_url(f"{base}/portal/dashboard")
    return page


def shoot(page, name: str) -> None:
    """A full-page screenshot named for the page and the viewport's width."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}-{page.viewport_size['width']}.png"), full_page=True)


def create_key(page, base: str, label: str) -> str:
    page.goto(f"{base}/portal/keys/new")
    page.fill("#label", label)
    page.click("button[type=submit]:has-text('Create key')")
    return page.input_value("#new-key")


def key_rows(page, base: str) -> int:
    page.goto(f"{base}/portal/dashboard")
    return page.locator("table.keys tbody tr").count()


# ---------------------------------------------------------------- item 5
def test_reloading_the_key_created_page_issues_no_second_key(browser, portal_server, portal_app):  # noqa: F811
    base, _ = portal_server
    email, _ = make_user(portal_app)
    page = signed_in(browser, base, email)
    key = create_key(page, base, "reload test")
    assert key.startswith("mrd_")
    assert re.search(r"/portal/keys/issued/[\w-]+$", page.url), page.url  # redirected after the POST
    shoot(page, "key-created")
    page.reload()
    assert page.inner_text("h1") == "Shown once"
    assert key not in page.content()
    shoot(page, "key-shown-once")
    assert key_rows(page, base) == 1


# ---------------------------------------------------------------- item 6
def test_revoke_and_rotate_ask_for_confirmation_and_last_used_has_a_time(browser, portal_server, portal_app):  # noqa: F811
    base, _ = portal_server
    email, _ = make_user(portal_app)
    page = signed_in(browser, base, email)
    key = create_key(page, base, "confirm test")
    prefix = key.split("_")[1]
    answer = requests.get(
        f"{base}/v1/geocoding", params={"query": "Mannerheimintie 5, Helsinki"}, headers={"X-API-Key": key}, timeout=30
    )
    assert answer.status_code == 200, answer.text
    page.goto(f"{base}/portal/dashboard")
    row = f"tr[data-prefix='{prefix}']"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", page.inner_text(f"{row} td.last-used"))
    shoot(page, "dashboard")
    page.click(f"{row} :text('Revoke')")
    assert page.inner_text("h1") == "Revoke this key?"  # one click changed nothing yet
    shoot(page, "confirm-revoke")
    page.click("a:has-text('Cancel')")
    assert page.inner_text(f"{row} td.state") == "active"
    page.click(f"{row} :text('Rotate')")
    assert page.inner_text("h1") == "Rotate this key?"
    grace = page.locator("label[for=grace_hours]")
    assert grace.is_visible() and "hours" in grace.inner_text()
    shoot(page, "confirm-rotate")
    page.fill("#grace_hours", "2")
    page.click("button[type=submit]:has-text('Rotate the key')")
    assert "works until" in page.inner_text(".notice")
    page.goto(f"{base}/portal/dashboard")
    page.click(f"{row} :text('Revoke')")
    page.click("button[type=submit]:has-text('Revoke the key')")
    assert page.inner_text("h1") == "Key revoked"


# ---------------------------------------------------------------- item 8
# The left edges of the first and the last text of an element: equal when its text flows as one
# paragraph, the last one right of the link when a flex label makes columns of text and link.
TEXT_LEFT_EDGES = """selector => {
  const texts = [...document.querySelector(selector).childNodes].filter(n => n.nodeType === 3 && n.textContent.trim());
  const left = node => {
    const range = document.createRange();
    range.selectNodeContents(node);
    return Math.min(...[...range.getClientRects()].map(r => r.left));
  };
  return [left(texts[0]), left(texts[texts.length - 1])];
}"""


def no_page_overflow(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("viewport", [WIDE, PHONE], ids=["1280", "390"])
def test_layout_terms_hints_placeholders_404_and_phone_width(browser, portal_server, portal_app, viewport):  # noqa: F811
    base, _ = portal_server
    anonymous = browser.new_context(viewport=viewport).new_page()
    # the terms checkbox: its label is one paragraph beside the box, not three narrow columns
    anonymous.goto(f"{base}/portal/signup")
    first_left, last_left = anonymous.evaluate(TEXT_LEFT_EDGES, "label.check span")
    assert abs(first_left - last_left) < 2, (first_left, last_left)  # the text after the link wraps back
    assert no_page_overflow(anonymous)
    shoot(anonymous, "signup")
    # the terms page, linked from every page
    anonymous.click("footer a:has-text('Terms of use')")
    assert anonymous.url == f"{base}/portal/terms" and anonymous.inner_text("h1") == "Terms of use"
    terms = anonymous.inner_text("main")
    assert "© OpenStreetMap contributors" in terms and "ODbL" in terms and "the operator of this deployment" in terms
    shoot(anonymous, "terms")
    # a portal URL without a page: the portal's HTML page, not the API's JSON
    missing = anonymous.goto(f"{base}/portal/no-such-page")
    assert missing.status == 404 and missing.headers["content-type"].startswith("text/html")
    assert anonymous.inner_text("h1") == "Not Found" and anonymous.locator("footer").count() == 1
    shoot(anonymous, "not-found")

    email, _ = make_user(portal_app)
    page = signed_in(browser, base, email, viewport)
    # settings: the password rule is under its field, the button on a line of its own
    page.goto(f"{base}/portal/settings")
    hint = page.locator("form small.hint").first.bounding_box()
    button = page.locator("button:has-text('Change password')").bounding_box()
    assert button["y"] >= hint["y"] + hint["height"] - 1, (hint, button)
    shoot(page, "settings")
    # console hints: Markdown code spans as <code>, no backticks; markers/path placeholders in full
    page.goto(f"{base}/portal/console?fn=staticmap")
    assert page.get_attribute("#p-markers", "placeholder") == "color:red|label:A|43.7384,7.4246"
    assert page.get_attribute("#p-path", "placeholder") == "color:blue|weight:4|43.7384,7.4246|43.7402,7.4271"
    assert "`" not in page.inner_text(".params") and page.locator(".params small.hint code").count() >= 2
    assert no_page_overflow(page)
    shoot(page, "console-staticmap")
    # the keys table fits a phone: it scrolls inside its card, the page does not
    for i in range(2):
        create_key(page, base, f"a rather long label for key {i}")
    page.goto(f"{base}/portal/dashboard")
    assert no_page_overflow(page), page.evaluate("document.documentElement.scrollWidth")
    shoot(page, "dashboard-keys")


# ---------------------------------------------------------------- item 9
OPERATOR = "operator@meridian.test"


@pytest.fixture(scope="module")
def operator_server(portal_settings, portal_env, portal_worker, tmp_path_factory):
    """gunicorn with an operator's address (upgrade requests are mailed to it)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**portal_env, "PORTAL_BASE_URL": base, "PORTAL_OPERATOR_EMAIL": OPERATOR}
    proc = start_gunicorn(portal_settings, port, tmp_path_factory.mktemp("logs") / "operator-gunicorn.log", **env)
    try:
        yield base
    finally:
        stop(proc)


@pytest.mark.parametrize("viewport", [WIDE, PHONE], ids=["1280", "390"])
def test_console_marks_what_the_plan_excludes_and_an_upgrade_request_reaches_the_operator(
    browser, operator_server, portal_app, mailbox, viewport
):
    base = operator_server
    email, account_id = make_user(portal_app)  # on the free plan: no static maps, isochrones, geometry
    page = signed_in(browser, base, email, viewport)
    page.goto(f"{base}/portal/console")
    for fn in ("staticmap", "isochrone", "geometry"):
        tab = page.locator(f"nav.tabs [data-fn={fn}]")
        assert "not in your plan" in tab.inner_text() and tab.get_attribute("aria-disabled") == "true"
        assert tab.evaluate("e => e.tagName") == "SPAN"  # not a link
    assert page.locator("nav.tabs [data-fn=routing]").get_attribute("aria-disabled") is None
    shoot(page, "console-plan-marks")
    page.goto(f"{base}/portal/console?fn=isochrone")
    assert page.locator("button[type=submit]:has-text('Send')").is_disabled()
    page.click("#not-in-plan a")
    # the plan page: the current plan, its quotas, key cap and services, and every plan
    assert page.url == f"{base}/portal/plan" and "free" in page.inner_text("h1")
    current = page.inner_text("#current")
    assert "60 a minute" in current and "of at most 5" in current and "geocoding" in current
    assert page.locator("#plans tr[data-plan]").count() >= 3
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shoot(page, "plan")
    page.select_option("#wanted", "standard")
    page.fill("#message", "Static maps for our <b>delivery</b> app")
    page.click("button[type=submit]:has-text('Send the request')")
    assert "reached the operator (by mail" in page.inner_text("#sent")
    assert "standard" in page.inner_text("#pending")
    shoot(page, "plan-requested")
    # ... by mail, through the real SMTP server ...
    mail = mailbox.wait(OPERATOR, count=1, timeout=60)
    found_mail = [m for m in mailbox.messages(OPERATOR) if email in m.get_body(preferencelist=("plain",)).get_content()]
    assert found_mail, [m["Subject"] for m in mailbox.messages(OPERATOR)]
    text = found_mail[0].get_body(preferencelist=("plain",)).get_content()
    assert "Plan asked for: standard" in text and "<b>delivery</b>" in text and f"{base}/portal/admin" in text
    assert "&lt;b&gt;delivery" in found_mail[0].get_body(preferencelist=("html",)).get_content()
    assert mail["Subject"] == "Meridian: a request for another plan"
    # ... and in the admin view, until dismissed
    admin_email, _ = make_user(portal_app, role="admin")
    admin = signed_in(browser, base, admin_email, viewport)
    admin.goto(f"{base}/portal/admin")
    row = admin.locator(f"#upgrades tr[data-account='{account_id}']")
    assert "standard" in row.inner_text() and "<b>delivery</b>" in row.inner_text()
    shoot(admin, "admin-upgrades")
    row.locator("button:has-text('Dismiss')").click()
    assert admin.locator(f"#upgrades tr[data-account='{account_id}']").count() == 0

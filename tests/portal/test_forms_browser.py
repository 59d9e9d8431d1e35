"""The portal's forms and its refused-link page in real headless Chromium (Debian's chromium through
playwright) against gunicorn, a Celery worker and a real SMTP server: every field's problem is
shown next to the field at once, marked for assistive technology, with what the user typed kept
(passwords excepted); a link that cannot be used offers a new one. Screenshots at 1280 and 390 px
go to $PORTAL_FORMS_SHOTS (default tests/artifacts)."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from accounts.tokens import RESET, VERIFY
from app.portal.services import portal
from config.settings import PROJECT_ROOT
from tests.browser import chromium
from tests.portal.conftest import link_in
from tests.portal.test_pages import PASSWORD, fresh_email, make_user
from tests.portal.test_portal_browser import portal_server  # noqa: F401  # the module's live portal

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.slow]
SHOTS = Path(os.environ.get("PORTAL_FORMS_SHOTS", PROJECT_ROOT / "tests" / "artifacts"))
WIDTHS = (1280, 390)


def _shoot(page, name: str) -> None:
    """The page at each width, whole."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": WIDTHS[0], "height": 900})


def _assert_marked(page, field_id: str, message: str) -> None:
    """The field is marked invalid and described by its error text, which is next to it."""
    field = page.locator(f"#{field_id}")
    assert field.get_attribute("aria-invalid") == "true", field_id
    described = (field.get_attribute("aria-describedby") or "").split()
    assert f"{field_id}-error" in described, described
    error = page.locator(f".field:has(#{field_id}) #{field_id}-error")
    assert message in error.inner_text(), (field_id, error.inner_text())


def _assert_clean(page, field_id: str) -> None:
    assert page.locator(f"#{field_id}").get_attribute("aria-invalid") is None, field_id


def _sign_in(page, base: str, email: str) -> None:
    page.goto(f"{base}/portal/login")
    page.fill("#email", email)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]:has-text('Sign in')")
    page.wait_for_url(f"{base}/portal/dashboard")


def _issued_long_ago(portal_app, purpose: str, account_id: int) -> str:
    """A link token issued 25 hours ago: an expired link, as a day of waiting would make it (the
    clock of this test process only, while the token is signed)."""
    past = time.time() - 25 * 3600
    with portal_app.app_context(), pytest.MonkeyPatch.context() as mp:
        user = portal().users.get(account_id)
        assert user is not None
        mp.setattr(time, "time", lambda: past)
        return portal().signer.issue(purpose, user)


def test_every_form_shows_all_errors_next_to_their_fields(portal_server, portal_app):  # noqa: F811
    base, _ = portal_server
    email, account_id = make_user(portal_app)
    with portal_app.app_context():
        user = portal().users.get(account_id)
        assert user is not None
        reset_token = portal().signer.issue(RESET, user)
    with chromium() as browser:
        page = browser.new_context(viewport={"width": WIDTHS[0], "height": 900}).new_page()

        # sign-up: three problems at once, the address kept, the password not
        page.goto(f"{base}/portal/signup")
        page.fill("#email", "not-an-address")
        page.fill("#password", "short1")
        page.click("button[type=submit]:has-text('Sign up')")
        _assert_marked(page, "email", "not a valid e-mail address")
        _assert_marked(page, "password", "password too short")
        _assert_marked(page, "terms", "please accept the terms")
        assert page.input_value("#email") == "not-an-address"
        assert page.input_value("#password") == ""
        assert "email:" not in page.inner_text("main")  # no "field: message" list above the form
        _shoot(page, "signup-errors")
        page.fill("#email", "someone@example.com")
        page.fill("#password", "onlyletterslong")
        page.check("#terms")
        page.click("button[type=submit]:has-text('Sign up')")
        _assert_clean(page, "email")
        _assert_clean(page, "terms")
        _assert_marked(page, "password", "password too weak")
        assert page.is_checked("#terms")

        # sign-in
        page.goto(f"{base}/portal/login")
        page.fill("#email", "nobody-at-example")
        page.click("button[type=submit]:has-text('Sign in')")
        _assert_marked(page, "email", "not a valid e-mail address")
        _assert_marked(page, "password", "required")
        assert page.input_value("#email") == "nobody-at-example"

        # reset request and reset confirm
        page.goto(f"{base}/portal/reset")
        page.fill("#email", "x@")
        page.click("button[type=submit]")
        _assert_marked(page, "email", "not a valid e-mail address")
        assert page.input_value("#email") == "x@"
        page.goto(f"{base}/portal/reset/confirm?token={reset_token}")
        page.fill("#password", "weak")
        page.click("button[type=submit]")
        _assert_marked(page, "password", "password too short")
        assert "password-hint" in (page.get_attribute("#password", "aria-describedby") or "")

        # settings: the password change, then the e-mail change
        _sign_in(page, base, email)
        page.goto(f"{base}/portal/settings")
        page.fill("#pw-password", "short1")
        page.click("button[type=submit]:has-text('Change password')")
        _assert_marked(page, "pw-current", "required")
        _assert_marked(page, "pw-password", "password too short")
        _assert_clean(page, "em-email")
        page.fill("#pw-current", "not my password 9")
        page.fill("#pw-password", "a new good pass 7")
        page.click("button[type=submit]:has-text('Change password')")
        _assert_marked(page, "pw-current", "the current password is wrong")
        page.fill("#em-email", "not an address")
        page.click("button[type=submit]:has-text('Send a confirmation link')")
        _assert_marked(page, "em-email", "not a valid e-mail address")
        _assert_marked(page, "em-current", "required")
        assert page.input_value("#em-email") == "not an address"

        # key creation
        page.goto(f"{base}/portal/keys/new")
        page.fill("#label", "my backend")
        page.fill("#expires", "2020-01-01")
        page.click("button[type=submit]:has-text('Create key')")
        _assert_marked(page, "expires", "the date must be in the future")
        _assert_clean(page, "label")
        assert page.input_value("#label") == "my backend"
        assert page.input_value("#expires") == "2020-01-01"


def test_a_refused_link_offers_a_new_one(portal_server, portal_app, mailbox):  # noqa: F811
    base, _ = portal_server
    email, account_id = make_user(portal_app, verified=False)
    expired = _issued_long_ago(portal_app, VERIFY, account_id)
    with chromium() as browser:
        page = browser.new_context(viewport={"width": WIDTHS[0], "height": 900}).new_page()

        # signed out: ask by address; the answer is the same for an unknown address
        page.goto(f"{base}/portal/verify?token={expired}")
        assert "expired" in page.inner_text("#outcome")
        _shoot(page, "expired-link")
        page.fill("#verify-again #email", email)
        page.click("#verify-again button[type=submit]")
        assert "Check your mail" in page.inner_text("h1")
        known = page.inner_text("main .notice").replace(email, "@")
        fresh = link_in(mailbox.wait(email, timeout=30))
        page.goto(fresh)
        assert "confirmed" in page.inner_text("#outcome")

        unknown = fresh_email()
        page.goto(f"{base}/portal/verify?token={expired}")
        page.fill("#verify-again #email", unknown)
        page.click("#verify-again button[type=submit]")
        assert page.inner_text("main .notice").replace(unknown, "@") == known
        assert (
            "no account waiting for confirmation"
            in mailbox.wait(unknown, timeout=30).get_body(("plain",)).get_content()
        )

        # a bad address on that form: the error next to the field
        page.goto(f"{base}/portal/verify?token={expired}")
        page.fill("#verify-again #email", "nope")
        page.click("#verify-again button[type=submit]")
        _assert_marked(page, "email", "not a valid e-mail address")

        # signed in, not confirmed yet: one button sends a new link to the account's address
        other, other_id = make_user(portal_app, verified=False)
        _sign_in(page, base, other)
        page.goto(f"{base}/portal/verify?token={_issued_long_ago(portal_app, VERIFY, other_id)}")
        page.click("#resend button[type=submit]")
        assert "Check your mail" in page.inner_text("h1")
        page.goto(link_in(mailbox.wait(other, timeout=30)))
        assert "confirmed" in page.inner_text("#outcome")

        # a damaged link, signed in and confirmed by now: nothing to ask for
        page.goto(f"{base}/portal/verify?token={uuid.uuid4().hex}")
        assert page.locator("#verify-again, #resend").count() == 0
        assert "already confirmed" in page.inner_text("main")

        # an expired reset link: the way to the reset request form
        page.goto(f"{base}/portal/reset/confirm?token={_issued_long_ago(portal_app, RESET, account_id)}")
        assert "expired" in page.inner_text("#outcome")
        page.click("a#again")
        page.wait_for_url(f"{base}/portal/reset")
        assert page.locator("#email").count() == 1

"""The whole journey of a new developer in real headless Chromium (Debian's chromium through
playwright) against gunicorn, a Celery worker and a real SMTP server (aiosmtpd) started here:
sign up, read the verification mail, verify, sign in, create a key, copy it with the copy
button, call /v1/geocoding with it, try the console (a free plan: the answer without a map), see
the calls in the account's usage,
revoke the key and get 401. Screenshots go to tests/artifacts/portal-*.png."""

from __future__ import annotations

import time
import uuid

import pytest
import requests

from config.settings import PROJECT_ROOT
from tests.browser import chromium
from tests.fixtures_live import free_port, start_gunicorn, stop
from tests.portal.conftest import link_in

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.slow]
ARTIFACTS = PROJECT_ROOT / "tests" / "artifacts"
PASSWORD = "browser pass 42"


@pytest.fixture(scope="module")
def portal_server(portal_settings, portal_env, portal_worker, tmp_path_factory):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**portal_env, "PORTAL_BASE_URL": base}
    log = tmp_path_factory.mktemp("logs") / "portal-gunicorn.log"
    proc = start_gunicorn(portal_settings, port, log, **env)
    try:
        yield base, log
    finally:
        stop(proc)


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"{what} not seen within {timeout} s")


def test_sign_up_verify_key_console_usage_revoke(portal_server, mailbox):
    portal_server, server_log = portal_server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    email = f"browser-{uuid.uuid4().hex[:8]}@example.com"
    problems: list[str] = []
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=portal_server)
        page = context.new_page()
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("requestfailed", lambda r: problems.append(f"failed {r.url}"))

        # sign up
        page.goto(f"{portal_server}/portal/signup")
        page.fill("#email", email)
        page.fill("#password", PASSWORD)
        page.check("#terms")
        page.screenshot(path=str(ARTIFACTS / "portal-signup.png"))
        page.click("button[type=submit]:has-text('Sign up')")
        assert "Check your mail" in page.inner_text("h1")

        # the verification mail, through the real SMTP server
        link = link_in(mailbox.wait(email, timeout=30))
        assert link.startswith(f"{portal_server}/portal/verify?token=")
        page.goto(link)
        assert "confirmed" in page.inner_text("#outcome")

        # sign in
        page.goto(f"{portal_server}/portal/login")
        page.fill("#email", email)
        page.fill("#password", PASSWORD)
        page.click("button[type=submit]:has-text('Sign in')")
        page.wait_for_url(f"{portal_server}/portal/dashboard")
        assert "Plan: free" in page.inner_text("#plan")

        # create a key, copy it with the copy button
        page.goto(f"{portal_server}/portal/keys/new")
        page.fill("#label", "browser test")
        page.click("button[type=submit]:has-text('Create key')")
        key = page.input_value("#new-key")
        secret = page.input_value("#new-secret")
        assert key.startswith("mrd_") and secret
        page.click("button.copy[data-copy=new-key]")
        # the handler awaits the clipboard, then says "Copied" (for 2 s)
        page.wait_for_function(
            "document.querySelector('button.copy[data-copy=new-key]').textContent === 'Copied'", timeout=10_000
        )
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == key
        page.screenshot(path=str(ARTIFACTS / "portal-key-created.png"))

        # the key works on the API
        answer = requests.get(
            f"{portal_server}/v1/geocoding",
            params={"query": "Mannerheimintie 5, Helsinki"},
            headers={"X-API-Key": copied},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["candidates"], answer.text

        # the console, with the copied key pasted, routes; the free plan has no static maps, so
        # the answer comes without its map
        page.goto(f"{portal_server}/portal/console?fn=routing")
        page.fill("#key", copied)
        # the first route of a worker loads the graph (and JIT-compiles): several seconds on a
        # loaded machine
        page.click("button[type=submit]:has-text('Send')", no_wait_after=True)
        page.wait_for_selector("#result", timeout=120_000)
        assert page.inner_text("#result .status") == "200"
        assert "static maps are not in your plan" in page.inner_text("#result")
        page.locator("#result").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "portal-console-map.png"), full_page=True)

        # the calls are in the account's windows and the key's usage (geocoding + routing today)
        def usage_row():
            page.goto(f"{portal_server}/portal/dashboard")
            minute = page.locator("#plan td.counters").first.inner_text()
            today = page.inner_text(f"tr[data-prefix='{key.split('_')[1]}'] .today")
            return minute == "2" and today == "2"

        _wait(usage_row, 10, "the two calls in the account's counters")
        csv_text = page.request.get(f"{portal_server}/portal/usage.csv").text()
        header, *rows = csv_text.strip().splitlines()
        today = dict(zip(header.split(","), rows[-1].split(","), strict=True))
        assert today["geocoding"] == "1" and today["routing"] == "1" and today["total"] == "2"
        page.screenshot(path=str(ARTIFACTS / "portal-dashboard.png"), full_page=True)
        assert secret not in page.content() and key not in page.content()  # shown once only

        # revoke: the key answers 401 within AUTH_CACHE_TTL in every gunicorn worker
        page.click(f"tr[data-prefix='{key.split('_')[1]}'] a:has-text('Revoke')")
        page.click("button[type=submit]:has-text('Revoke the key')")  # the confirmation
        assert "Key revoked" in page.inner_text("h1")

        def refused():
            codes = {
                requests.get(
                    f"{portal_server}/v1/geocoding",
                    params={"query": "Helsinki"},
                    headers={"X-API-Key": key},
                    timeout=10,
                ).status_code
                for _ in range(4)
            }
            return codes == {401}

        _wait(refused, 10, "401 for the revoked key")
    assert problems == [], problems
    logged = server_log.read_text()
    assert "/portal/verify " in logged or "/portal/verify 200" in logged
    for secret_text in (link.partition("token=")[2], PASSWORD, key, secret):
        assert secret_text not in logged

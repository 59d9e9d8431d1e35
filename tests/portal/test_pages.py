"""The portal's pages through the Flask app with a real SQLite database, real Redis, a real Celery
worker and a real SMTP server (aiosmtpd): sign-up and verification by mail, CSRF, no address
enumeration, attempt limits, keys shown once, revocation, usage, console, admin, operator CLI."""

from __future__ import annotations

import hashlib
import re
import time
import uuid

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from accounts.users import UserDirectory
from app.portal.services import portal
from tests.portal.conftest import link_in

pytestmark = [pytest.mark.integration]
PASSWORD = "good password 1"


def csrf(html: bytes) -> str:
    match = re.search(rb'name="csrf_token" value="([^"]+)"', html)
    assert match, html[:500]
    return match.group(1).decode()


def page_text(resp, email: str) -> bytes:
    """The body with the echoed address and the (time-stamped) CSRF tokens blanked."""
    return re.sub(rb'name="csrf_token" value="[^"]+"', b"", resp.data.replace(email.encode(), b"@"))


def fresh_email() -> str:
    return f"dev-{uuid.uuid4().hex[:10]}@example.com"


@pytest.fixture()
def client(portal_app):
    return portal_app.test_client()


def make_user(portal_app, *, verified: bool = True, role: str = "user") -> tuple[str, int]:
    with portal_app.app_context():
        users: UserDirectory = portal().users
        user = users.sign_up(fresh_email(), PASSWORD)
        assert user is not None and user.email is not None
        if verified:
            users.mark_verified(user.id)
        users.set_role(user.id, role)
        return user.email, user.id


def login(client, email: str, password: str = PASSWORD):
    token = csrf(client.get("/portal/login").data)
    return client.post("/portal/login", data={"csrf_token": token, "email": email, "password": password})


def post(client, path: str, data: dict, page: str = "/portal/dashboard"):
    """POST the form with a fresh CSRF token, following the redirect of a post/redirect/get."""
    return client.post(path, data={"csrf_token": csrf(client.get(page).data), **data}, follow_redirects=True)


def found(pattern: bytes, page: bytes) -> str:
    """The first group of ``pattern`` in the page (the test fails when it is not there)."""
    match = re.search(pattern, page)
    assert match is not None, f"{pattern!r} not in the page"
    return match.group(1).decode()


def create_key(client, **fields) -> tuple[str, str, bytes]:
    resp = post(client, "/portal/keys/new", {"label": "test", **fields}, page="/portal/keys/new")
    assert resp.status_code == 200, resp.data[:2000]
    key = found(rb'id="new-key" class="mono" readonly value="([^"]+)"', resp.data)
    secret = found(rb'id="new-secret" class="mono" readonly value="([^"]+)"', resp.data)
    return key, secret, resp.data


# ---------------------------------------------------------------- sign-up and mail
def test_sign_up_verification_mail_and_single_use_link(client, portal_worker, mailbox):
    email = fresh_email()
    page = client.get("/portal/signup")
    assert page.status_code == 200
    resp = client.post(
        "/portal/signup",
        data={"csrf_token": csrf(page.data), "email": email.upper(), "password": PASSWORD, "terms": "y"},
    )
    assert resp.status_code == 200 and b"Check your mail" in resp.data and email.encode() in resp.data
    message = mailbox.wait(email)
    assert message["From"] == "Meridian Test <portal@meridian.test>"
    assert message.get_content_type() == "multipart/alternative"
    html = message.get_body(preferencelist=("html",)).get_content()
    assert "<img" not in html.lower()  # no tracking pixels
    link = link_in(message)
    assert link in html
    path = link.removeprefix("http://localhost")
    assert login(client, email).status_code == 302  # unverified accounts may sign in ...
    assert (
        client.post("/portal/keys/new", data={"csrf_token": csrf(client.get("/portal/keys/new").data)}).status_code
        == 403
    )
    assert path.startswith("/portal/verify?token=")
    tampered = path[:-3] + ("aaa" if not path.endswith("aaa") else "bbb")
    assert client.get(tampered).status_code == 400
    ok = client.get(path)
    assert ok.status_code == 200 and b"confirmed" in ok.data
    again = client.get(path)
    assert again.status_code == 400 and b"already been used" in again.data
    create_key(client)  # ... and create keys once verified


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"email": "not-an-address", "password": PASSWORD, "terms": "y"}, b"not a valid e-mail address"),
        ({"email": "x@example.com", "password": "short1", "terms": "y"}, b"password too short"),
        ({"email": "x@example.com", "password": "onlylettershere", "terms": "y"}, b"password too weak"),
        ({"email": "x@example.com", "password": PASSWORD}, b"please accept the terms"),
    ],
)
def test_sign_up_bad_input_names_the_field(client, fields, message):
    page = client.get("/portal/signup")
    resp = client.post("/portal/signup", data={"csrf_token": csrf(page.data), **fields})
    assert resp.status_code == 400 and message in resp.data


def test_double_submission_of_sign_up_makes_one_account(client, portal_app, portal_worker, mailbox):
    email = fresh_email()
    token = csrf(client.get("/portal/signup").data)
    form = {"csrf_token": token, "email": email, "password": PASSWORD, "terms": "y"}
    first, second = client.post("/portal/signup", data=form), client.post("/portal/signup", data=form)
    assert first.status_code == second.status_code == 200
    assert first.data == second.data  # the second answers as the first: nothing to learn
    with portal_app.app_context(), portal().store.session() as s:
        n = s.execute(text("SELECT count(*) FROM accounts WHERE email = :e"), {"e": email}).scalar()
    assert n == 1
    mailbox.wait(email, count=2)  # the verification, then "someone tried to sign up with your address"
    subjects = sorted(m["Subject"] for m in mailbox.messages(email))
    assert subjects == sorted(
        ["Confirm your e-mail address for Meridian", "Someone tried to sign up to Meridian with your address"]
    )


# ---------------------------------------------------------------- security
@pytest.mark.parametrize(
    "path", ["/portal/login", "/portal/signup", "/portal/reset", "/portal/keys/new", "/portal/logout"]
)
def test_csrf_token_is_required_on_every_form(client, portal_app, path):
    email, _ = make_user(portal_app)
    login(client, email)
    resp = client.post(path, data={"email": email, "password": PASSWORD, "terms": "y", "label": "x"})
    assert resp.status_code == 400 and b"Form expired" in resp.data
    resp = client.post(path, data={"csrf_token": "forged", "email": email, "password": PASSWORD})
    assert resp.status_code == 400


def test_resend_verification(client, portal_app, portal_worker, mailbox):
    email, _ = make_user(portal_app, verified=False)
    login(client, email)
    page = client.get("/portal/dashboard")
    assert b"Send the link again" in page.data
    resp = client.post("/portal/verify/resend", data={"csrf_token": csrf(page.data)})
    assert resp.status_code == 200 and b"Check your mail" in resp.data
    path = link_in(mailbox.wait(email)).removeprefix("http://localhost")
    caught = client.get("/portal/dev/mail")  # development: the caught mails are listed
    assert caught.status_code == 200 and email.encode() in caught.data
    assert client.get(path).status_code == 200
    assert b"Send the link again" not in client.get("/portal/dashboard").data


def test_no_enumeration_on_login_sign_up_and_reset(client, portal_app):
    known, _ = make_user(portal_app)
    unknown = fresh_email()
    a = client.post(
        "/portal/login",
        data={"csrf_token": csrf(client.get("/portal/login").data), "email": known, "password": "wrong password 1"},
    )
    b = client.post(
        "/portal/login",
        data={"csrf_token": csrf(client.get("/portal/login").data), "email": unknown, "password": "wrong password 1"},
    )
    assert a.status_code == b.status_code == 401
    assert page_text(a, known) == page_text(b, unknown)
    for path, extra in (("/portal/signup", {"password": PASSWORD, "terms": "y"}), ("/portal/reset", {})):
        answers = []
        for email in (known, unknown):
            resp = client.post(path, data={"csrf_token": csrf(client.get(path).data), "email": email, **extra})
            answers.append((resp.status_code, page_text(resp, email)))
        assert answers[0] == answers[1], path


def test_login_is_rate_limited_per_address(client, portal_app):
    email, _ = make_user(portal_app)
    statuses = []
    for _ in range(6):  # PORTAL_LOGIN_LIMIT=5/300 in the tests
        token = csrf(client.get("/portal/login").data)
        resp = client.post("/portal/login", data={"csrf_token": token, "email": email, "password": "wrong password 1"})
        statuses.append(resp.status_code)
    assert statuses == [401] * 5 + [429]
    assert b"Too many attempts" in resp.data and int(resp.headers["Retry-After"]) > 0
    # the right password is refused too while the limit holds
    assert login(client, email).status_code == 429


def test_security_headers_and_cookie_flags(client, portal_app):
    resp = client.get("/portal/login")
    assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]
    assert "script-src 'self'" in resp.headers["Content-Security-Policy"]
    assert resp.headers["X-Frame-Options"] == "DENY" and resp.headers["Referrer-Policy"] == "no-referrer"
    cookie = resp.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/portal" in cookie
    api = client.get("/v1/health/live")
    assert "Content-Security-Policy" not in api.headers and "Set-Cookie" not in api.headers


def test_secret_shown_once_and_stored_hashed(client, portal_app):
    email, _ = make_user(portal_app)
    login(client, email)
    key, secret, page = create_key(client, scopes=["geocoding", "suggest"])
    assert b"shown only this once" in page
    dashboard = client.get("/portal/dashboard").data
    prefix = key.split("_")[1]
    assert prefix.encode() in dashboard and b"geocoding, suggest" in dashboard
    assert key.encode() not in dashboard and secret.encode() not in dashboard
    with portal_app.app_context(), portal().store.session() as s:
        row = s.execute(text("SELECT key_hash, secret_hash FROM api_keys WHERE prefix = :p"), {"p": prefix}).one()
    assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert row.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    # another account cannot revoke it
    other, _ = make_user(portal_app)
    client.post("/portal/logout", data={"csrf_token": csrf(client.get("/portal/dashboard").data)})
    login(client, other)
    assert post(client, f"/portal/keys/{prefix}/revoke", {"confirm": "yes"}).status_code == 404


def test_key_use_usage_revoke_and_rotate(client, portal_app):
    email, _ = make_user(portal_app)
    login(client, email)
    key, _, _ = create_key(client)
    api = client.get("/v1/geocoding?query=Mannerheimintie%205%2C%20Helsinki", headers={"X-API-Key": key})
    assert api.status_code == 200, api.data
    # a leased quota settles its usage within about a second (longer on a loaded machine)
    deadline = time.monotonic() + 15
    while True:
        csv_text = client.get("/portal/usage.csv").data.decode()
        header, *rows = csv_text.strip().splitlines()
        if ("geocoding" in header.split(",") and rows[-1].split(",")[-1] == "1") or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert "geocoding" in header.split(",") and rows[-1].split(",")[-1] == "1", csv_text
    assert client.get("/portal/usage.svg").data.startswith(b"<?xml")
    prefix = key.split("_")[1]
    rotated = post(client, f"/portal/keys/{prefix}/rotate", {"confirm": "yes", "grace_hours": "1"})
    assert rotated.status_code == 200 and b"works until" in rotated.data
    new_key = re.search(rb'id="new-key" class="mono" readonly value="([^"]+)"', rotated.data).group(1).decode()
    assert client.get("/v1/geocoding?query=Helsinki", headers={"X-API-Key": key}).status_code in (200, 404)
    assert post(client, f"/portal/keys/{prefix}/rotate", {"confirm": "yes", "grace_hours": "200"}).status_code == 400
    assert post(client, f"/portal/keys/{prefix}/revoke", {"confirm": "yes"}).status_code == 200
    assert client.get("/v1/geocoding?query=Helsinki", headers={"X-API-Key": key}).status_code == 401
    assert client.get("/v1/geocoding?query=Helsinki", headers={"X-API-Key": new_key}).status_code in (200, 404)


def test_console_calls_the_api_with_the_users_key_and_draws_a_map(client, portal_app, portal_worker):
    email, account_id = make_user(portal_app)
    with portal_app.app_context():
        portal().users.set_plan(account_id, "standard")  # a plan with static maps: the console draws one
    login(client, email)
    key, _, _ = create_key(client)
    page = client.get("/portal/console?fn=geocoding")
    assert b'name="query"' in page.data
    resp = client.post(
        "/portal/console?fn=geocoding",
        data={"csrf_token": csrf(page.data), "key": key, "query": "Mannerheimintie 5, Helsinki"},
    )
    assert resp.status_code == 200, resp.data[-3000:]
    assert b'class="status s2">200<' in resp.data and b"Mannerheimintie" in resp.data
    assert re.search(rb'<img src="data:image/png;base64,[A-Za-z0-9+/=]{1000,}" alt="map of the answer"', resp.data)
    other, _ = make_user(portal_app)
    client.post("/portal/logout", data={"csrf_token": csrf(client.get("/portal/dashboard").data)})
    login(client, other)
    page = client.get("/portal/console?fn=geocoding")
    stolen = client.post("/portal/console?fn=geocoding", data={"csrf_token": csrf(page.data), "key": key})
    assert stolen.status_code in (400,) and b"not one of your keys" in stolen.data


def test_password_reset_by_mail(client, portal_app, portal_worker, mailbox):
    email, _ = make_user(portal_app)
    resp = post(client, "/portal/reset", {"email": email}, page="/portal/reset")
    assert resp.status_code == 200
    path = link_in(mailbox.wait(email)).removeprefix("http://localhost")
    form = client.get(path)
    assert form.status_code == 200
    weak = client.post(path, data={"csrf_token": csrf(form.data), "password": "weak"})
    assert weak.status_code == 400 and b"password too short" in weak.data
    done = client.post(path, data={"csrf_token": csrf(form.data), "password": "brand new pass 2"})
    assert done.status_code == 200 and b"password is changed" in done.data
    assert client.post(path, data={"csrf_token": csrf(form.data), "password": "again new pass 3"}).status_code == 400
    assert login(client, email).status_code == 401
    assert login(client, email, "brand new pass 2").status_code == 302


def test_change_of_email_needs_the_new_address_confirmed(client, portal_app, portal_worker, mailbox):
    email, account_id = make_user(portal_app)
    login(client, email)
    new = fresh_email()
    resp = post(
        client,
        "/portal/settings",
        {"action": "email", "em-email": new, "em-current": PASSWORD},
        page="/portal/settings",
    )
    assert resp.status_code == 200 and b"confirmation link" in resp.data
    with portal_app.app_context():
        assert portal().users.get(account_id).email == email  # not before the link
    path = link_in(mailbox.wait(new)).removeprefix("http://localhost")
    assert client.get(path).status_code == 200
    with portal_app.app_context():
        assert portal().users.get(account_id).email == new


def test_password_change_signs_other_sessions_out(portal_app):
    email, _ = make_user(portal_app)
    a, b = portal_app.test_client(), portal_app.test_client()
    login(a, email)
    login(b, email)
    resp = post(
        a,
        "/portal/settings",
        {"action": "password", "pw-current": PASSWORD, "pw-password": "changed pass 22"},
        page="/portal/settings",
    )
    assert resp.status_code == 200 and b"Password changed" in resp.data
    assert a.get("/portal/dashboard").status_code == 200
    assert b.get("/portal/dashboard").status_code == 302


def test_operator_disable_makes_keys_401_and_admin_view(client, portal_app, portal_settings, portal_env, monkeypatch):
    from cli.main import main

    email, _ = make_user(portal_app)
    login(client, email)
    key, _, _ = create_key(client)
    assert client.get("/v1/geocoding?query=Helsinki", headers={"X-API-Key": key}).status_code in (200, 404)
    assert client.get("/portal/admin").status_code == 403
    monkeypatch.setenv("DATABASE_URL", portal_settings.database_url)
    runner = CliRunner()
    shown = runner.invoke(main, ["accounts", "show", email])
    assert shown.exit_code == 0 and '"verified": true' in shown.output and key.split("_")[1] in shown.output
    assert runner.invoke(main, ["accounts", "disable", email]).output.strip() == "disabled"
    time.sleep(portal_settings.auth_cache_ttl_s + 0.2)
    denied = client.get("/v1/geocoding?query=Helsinki", headers={"X-API-Key": key})
    assert denied.status_code == 401 and b"disabled" in denied.data
    assert client.get("/portal/dashboard").status_code == 302  # signed out too
    assert runner.invoke(main, ["accounts", "disable", email, "--enable"]).exit_code == 0
    assert runner.invoke(main, ["accounts", "set-plan", email, "pro"]).output.strip() == "plan pro (1 keys)"
    admin_email, _ = make_user(portal_app)
    assert runner.invoke(main, ["accounts", "promote", admin_email]).output.strip() == "admin"
    listing = runner.invoke(main, ["accounts", "list"])
    assert email in listing.output and "plan=pro" in listing.output
    admin = portal_app.test_client()
    login(admin, admin_email)
    page = admin.get("/portal/admin")
    assert page.status_code == 200 and email.encode() in page.data
    with portal_app.app_context():
        target = portal().users.by_email(email)
    resp = admin.post(
        f"/portal/admin/{target.id}", data={"csrf_token": csrf(page.data), "action": "plan", "plan": "standard"}
    )
    assert resp.status_code == 302
    with portal_app.app_context():
        assert portal().users.by_email(email).plan == "standard"


def test_api_requests_open_no_session_portal_pages_do(client, portal_app):
    email, _ = make_user(portal_app)
    assert login(client, email).status_code == 302
    with portal_app.test_request_context("/v1/geocoding", headers={"Cookie": client.get_cookie("meridian_portal")}):
        from flask import session

        portal_app.preprocess_request()
        assert portal_app.session_interface.is_null_session(session)  # the API faces: no cookie parsed
    page = client.get("/portal/dashboard")
    assert page.status_code == 200 and b'action="/portal/logout"' in page.data  # still signed in there

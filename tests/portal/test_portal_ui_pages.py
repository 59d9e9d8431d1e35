"""The portal's pages of issue 28 (items 5, 6, 8, 9) through the Flask app with real Redis and
SQLite: the new key shown once after a redirect, confirmations, the terms page, portal 404s, the
plan page and upgrade requests."""

from __future__ import annotations

import re

import pytest

from app.portal.services import portal
from app.runtime import runtime
from tests.portal.test_pages import csrf, found, login, make_user

pytestmark = [pytest.mark.integration]


@pytest.fixture()
def client(portal_app):
    return portal_app.test_client()


def new_key_redirect(client) -> str:
    page = client.get("/portal/keys/new")
    resp = client.post("/portal/keys/new", data={"csrf_token": csrf(page.data), "label": "prg"})
    assert resp.status_code == 303, resp.data[:500]
    return resp.headers["Location"]


# ---------------------------------------------------------------- item 5
def test_new_key_is_shown_once_after_a_redirect_and_never_stored_readable(client, portal_app):
    email, account_id = make_user(portal_app)
    login(client, email)
    location = new_key_redirect(client)
    assert location.startswith("/portal/keys/issued/")
    with portal_app.app_context():
        rt = runtime()
        stored = [
            rt.redis.get(k) for k in rt.redis.scan_iter(f"{rt.settings.service_name}:portal:reveal:{account_id}:*")
        ]
    shown = client.get(location)
    assert shown.status_code == 200
    key = found(rb'id="new-key" class="mono" readonly value="([^"]+)"', shown.data)
    secret = found(rb'id="new-secret" class="mono" readonly value="([^"]+)"', shown.data)
    assert stored and all(key.encode() not in v and secret.encode() not in v for v in stored)  # only padded
    again = client.get(location)  # a reload
    assert again.status_code == 410 and b"shown once" in again.data and key.encode() not in again.data
    with portal_app.app_context():
        assert len(portal().store.list_keys(portal().users.get(account_id).name)) == 1


def test_another_account_cannot_read_the_new_key(portal_app):
    owner, other = portal_app.test_client(), portal_app.test_client()
    login(owner, make_user(portal_app)[0])
    login(other, make_user(portal_app)[0])
    location = new_key_redirect(owner)
    stolen = other.get(location)
    assert stolen.status_code == 410 and b'id="new-key"' not in stolen.data
    assert owner.get(location).status_code == 200  # the owner still sees it once


# ---------------------------------------------------------------- item 6
def test_revoke_and_rotate_act_only_after_a_csrf_protected_confirmation(client, portal_app):
    email, account_id = make_user(portal_app)
    login(client, email)
    location = new_key_redirect(client)
    key = found(rb'id="new-key" class="mono" readonly value="([^"]+)"', client.get(location).data)
    prefix = key.split("_")[1]
    dashboard = client.get("/portal/dashboard").data
    for action in ("revoke", "rotate"):
        assert f'href="/portal/keys/{prefix}/{action}"'.encode() in dashboard  # a link to the confirmation
        confirm = client.get(f"/portal/keys/{prefix}/{action}")
        assert confirm.status_code == 200 and b'name="confirm" value="yes"' in confirm.data
        # the old one-click form (no confirm field) shows the confirmation and changes nothing
        one_click = client.post(f"/portal/keys/{prefix}/{action}", data={"csrf_token": csrf(dashboard)})
        assert one_click.status_code == 200 and b'name="confirm" value="yes"' in one_click.data
        # the confirmation without the CSRF token is refused
        forged = client.post(f"/portal/keys/{prefix}/{action}", data={"confirm": "yes", "grace_hours": "1"})
        assert forged.status_code == 400
    assert b'<label for="grace_hours">' in client.get(f"/portal/keys/{prefix}/rotate").data
    assert client.get("/v1/geocoding?query=Helsinki", headers={"X-API-Key": key}).status_code in (200, 404)
    with portal_app.app_context():
        assert [k.state() for k in portal().store.list_keys(portal().users.get(account_id).name)] == ["active"]


def test_last_used_shows_date_and_time_in_utc(client, portal_app):
    login(client, make_user(portal_app)[0])
    key = found(rb'id="new-key" class="mono" readonly value="([^"]+)"', client.get(new_key_redirect(client)).data)
    assert b'<td class="last-used">never</td>' in client.get("/portal/dashboard").data
    assert client.get("/v1/geocoding?query=Helsinki", headers={"X-API-Key": key}).status_code in (200, 404)
    dashboard = client.get("/portal/dashboard").data.decode()
    assert re.search(r"<td class=\"last-used\">\d{4}-\d\d-\d\d \d\d:\d\d UTC</td>", dashboard), dashboard[:3000]


# ---------------------------------------------------------------- item 8
def test_terms_page_and_html_404_in_the_portal_json_404_elsewhere(client):
    terms = client.get("/portal/terms")
    assert terms.status_code == 200 and b"ODbL" in terms.data and b"openstreetmap.org/copyright" in terms.data
    page = client.get("/portal/no-such-page")
    assert page.status_code == 404 and page.mimetype == "text/html" and b"<footer>" in page.data
    assert client.post("/portal/terms").status_code in (400, 405)  # a POST without CSRF token: the portal's page
    api = client.get("/v1/no-such-endpoint")
    assert api.status_code == 404 and api.is_json


def test_console_hints_render_code_spans_and_escape_the_rest():
    from app.portal.console import hint, placeholder

    assert str(hint("Markers: `color:red|<lat>,<lng>`; repeat")) == (
        "Markers: <code>color:red|&lt;lat&gt;,&lt;lng&gt;</code>; repeat"
    )
    assert str(hint("<script>alert(1)</script> `x")) == "&lt;script&gt;alert(1)&lt;/script&gt; `x"
    assert placeholder(["a|b", "c"]) == "a|b" and placeholder(2) == "2" and placeholder(None) == ""


# ---------------------------------------------------------------- item 9
def test_upgrade_requests_are_validated_kept_one_per_account_and_listed_for_admins(client, portal_app):
    email, account_id = make_user(portal_app)
    login(client, email)
    plan_page = client.get("/portal/plan")
    assert plan_page.status_code == 200 and b'data-plan="pro"' in plan_page.data
    token = csrf(plan_page.data)
    for bad in ({"plan": "free"}, {"plan": "no-such-plan"}, {"plan": "pro", "message": "x" * 501}):
        assert client.post("/portal/plan", data={"csrf_token": token, **bad}).status_code == 400
    assert client.post("/portal/plan", data={"plan": "pro"}).status_code == 400  # no CSRF token
    for wanted in ("pro", "standard"):  # a second request replaces the first
        sent = client.post("/portal/plan", data={"csrf_token": token, "plan": wanted, "message": "hi"})
        assert sent.status_code == 303 and sent.headers["Location"] == "/portal/plan?sent=stored"
    with portal_app.app_context():
        from app.portal.views_plan import upgrade_requests

        mine = [r for r in upgrade_requests().pending() if r.account_id == account_id]
    assert [(r.wanted_plan, r.message) for r in mine] == [("standard", "hi")]
    assert client.get("/portal/admin").status_code == 403  # not an admin
    admin = portal_app.test_client()
    login(admin, make_user(portal_app, role="admin")[0])
    listed = admin.get("/portal/admin")
    assert f'data-account="{account_id}"'.encode() in listed.data
    dismissed = admin.post(f"/portal/admin/upgrades/{account_id}/dismiss", data={"csrf_token": csrf(listed.data)})
    assert dismissed.status_code == 302
    assert f'data-account="{account_id}"'.encode() not in admin.get("/portal/admin").data


def test_unverified_accounts_cannot_ask_and_excluded_functions_are_not_called(client, portal_app):
    email, _ = make_user(portal_app, verified=False)
    login(client, email)
    page = client.get("/portal/plan")
    refused = client.post("/portal/plan", data={"csrf_token": csrf(page.data), "plan": "pro"})
    assert refused.status_code == 400 and b"Confirm your e-mail address" in refused.data
    console = client.get("/portal/console?fn=staticmap")
    assert b'data-fn="staticmap"' in console.data and b"not in your plan" in console.data
    posted = client.post(
        "/portal/console?fn=staticmap", data={"csrf_token": csrf(console.data), "key": "mrd_x_y", "center": "1,2"}
    )
    assert posted.status_code == 400 and b"is not in your plan" in posted.data

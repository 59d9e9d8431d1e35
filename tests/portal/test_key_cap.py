"""Issue 26, finding 1, in the portal: an account has at most its plan's ``max_keys`` live keys
(free: 5); one more is a form error, a revoked key frees its place, rotation works at the cap."""

from __future__ import annotations

import re

import pytest

from tests.portal.test_pages import create_key, csrf, login, make_user, post

pytestmark = [pytest.mark.integration]


def test_key_beyond_the_plans_cap_is_a_form_error(portal_app):
    client = portal_app.test_client()
    email, _ = make_user(portal_app)  # the portal's default plan: free, 5 live keys
    login(client, email)
    keys = [create_key(client)[0] for _ in range(5)]
    page = client.get("/portal/keys/new")
    refused = client.post("/portal/keys/new", data={"csrf_token": csrf(page.data), "label": "sixth"})
    assert refused.status_code == 400
    assert b"key limit reached: the free plan allows 5 live keys" in refused.data
    assert b'id="new-key"' not in refused.data
    assert b"Your plan allows 5 live keys; you have 5." in page.data
    # rotation at the cap: the old key keeps working for its grace period
    prefix = keys[0].split("_")[1]
    rotated = post(client, f"/portal/keys/{prefix}/rotate", {"confirm": "yes", "grace_hours": "1"})
    assert rotated.status_code == 200 and b"works until" in rotated.data
    # a revoked key frees its place (the old key in its grace period still counts)
    assert post(client, f"/portal/keys/{keys[1].split('_')[1]}/revoke", {"confirm": "yes"}).status_code == 200
    assert post(client, f"/portal/keys/{keys[2].split('_')[1]}/revoke", {"confirm": "yes"}).status_code == 200
    create_key(client)
    dashboard = client.get("/portal/dashboard").data
    assert re.search(rb"Live keys: 5 of 5", dashboard)

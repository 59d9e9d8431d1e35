"""The development mail page (issue 28 item 4): it lists every account's links, so it answers
only loopback clients and signed-in administrators, even in development."""

from __future__ import annotations

from tests.portal.test_pages import login, make_user

REMOTE = {"REMOTE_ADDR": "192.0.2.10"}  # TEST-NET-1: a client on another machine


def test_dev_mail_answers_loopback(portal_app):
    assert portal_app.test_client().get("/portal/dev/mail").status_code == 200


def test_dev_mail_is_hidden_from_other_machines(portal_app):
    client = portal_app.test_client()
    assert client.get("/portal/dev/mail", environ_base=REMOTE).status_code == 404
    email, _ = make_user(portal_app)
    login(client, email)
    assert client.get("/portal/dev/mail", environ_base=REMOTE).status_code == 404


def test_dev_mail_answers_an_administrator_from_elsewhere(portal_app):
    client = portal_app.test_client()
    email, _ = make_user(portal_app, role="admin")
    login(client, email)
    assert client.get("/portal/dev/mail", environ_base=REMOTE).status_code == 200

"""A new confirmation link asked for by address (``/portal/verify/again``, offered by the page of
a refused link): the same answer for an unconfirmed, a confirmed and an unknown address, and the
per-address limit of the mail-sending forms."""

from __future__ import annotations

import pytest

from tests.portal.test_pages import csrf, fresh_email, make_user, page_text

pytestmark = [pytest.mark.integration]
SIGNUP_LIMIT = 50  # PORTAL_SIGNUP_LIMIT=50/300,1000 in the tests (tests/portal/conftest.py)


def _ask(client, email: str):
    token = csrf(client.get("/portal/verify/again").data)
    return client.post("/portal/verify/again", data={"csrf_token": token, "email": email})


def test_new_confirmation_link_answers_the_same_for_every_address(portal_app):
    client = portal_app.test_client()
    waiting, _ = make_user(portal_app, verified=False)
    confirmed, _ = make_user(portal_app)
    unknown = fresh_email()
    answers = {email: _ask(client, email) for email in (waiting, confirmed, unknown)}
    assert {resp.status_code for resp in answers.values()} == {200}
    bodies = {page_text(resp, email) for email, resp in answers.items()}
    assert len(bodies) == 1, "the answer tells the addresses apart"
    assert b"if an account waiting for confirmation uses this address" in bodies.pop()


def test_new_confirmation_link_is_limited_per_address(portal_app):
    client = portal_app.test_client()
    address = fresh_email().replace("@", "-at-")  # not an address: counted, then refused, no mail
    statuses = [_ask(client, address).status_code for _ in range(SIGNUP_LIMIT + 1)]
    assert statuses == [400] * SIGNUP_LIMIT + [429]

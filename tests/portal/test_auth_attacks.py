"""Attacks on the portal's accounts, played through the app with real Redis, a real Celery worker
and a real SMTP server (issue 26): the pre-hijack through an e-mail-change link and the session
swap of the confirmation page (finding 2), sessions that outlive a sign-out and unlimited guesses
of the current password (finding 9), and three low ones: a stranger's wrong passwords locking the
owner out, CR/LF in ``next=``, and reset requests that cost less for unknown addresses."""

from __future__ import annotations

import pytest

from app.portal.services import portal
from tests.portal.conftest import link_in
from tests.portal.test_pages import PASSWORD, create_key, csrf, fresh_email, login, make_user, post

pytestmark = [pytest.mark.integration]

ATTACKER_PASSWORD = "attacker pass 1"
VICTIM_PASSWORD = "victim pass 2"
OTHER_SOURCE = {"REMOTE_ADDR": "127.0.0.2"}  # the test client's default is 127.0.0.1
RESET_SUBJECT = "Reset your Meridian password"


def settings_post(client, fields: dict):
    return post(client, "/portal/settings", fields, page="/portal/settings")


def path_of(message) -> str:
    return link_in(message).removeprefix("http://localhost")


def email_of(portal_app, account_id: int) -> str | None:
    with portal_app.app_context():
        user = portal().users.get(account_id)
    assert user is not None
    return user.email


# ---------------------------------------------------------------- finding 2
def test_pre_hijack_through_an_email_change_link(portal_app, portal_worker, mailbox):
    """An attacker signs up with the victim's address, asks to move the account to their own address
    and keeps the link; the victim recovers the account by a reset and creates a key. The attacker
    gets no link, and a link kept from before (made here through the signer) is dead."""
    victim, attacker = fresh_email(), fresh_email()
    mallory = portal_app.test_client()
    page = mallory.get("/portal/signup")
    signed_up = mallory.post(
        "/portal/signup",
        data={"csrf_token": csrf(page.data), "email": victim, "password": ATTACKER_PASSWORD, "terms": "y"},
    )
    assert signed_up.status_code == 200
    assert login(mallory, victim, ATTACKER_PASSWORD).status_code == 302  # unverified accounts may sign in
    asked = settings_post(mallory, {"action": "email", "em-email": attacker, "em-current": ATTACKER_PASSWORD})
    assert asked.status_code == 400 and b"confirm your current address first" in asked.data
    with portal_app.app_context():
        account = portal().users.by_email(victim)
        kept_link = portal().signer.issue("email", account, email=attacker)  # as if sent before the rule

    # The victim: "forgot password", a new password, a key.
    alice = portal_app.test_client()
    assert post(alice, "/portal/reset", {"email": victim}, page="/portal/reset").status_code == 200
    (reset,) = mailbox.wait_for(victim, subject=RESET_SUBJECT)
    form = alice.get(path_of(reset))
    done = alice.post(path_of(reset), data={"csrf_token": csrf(form.data), "password": VICTIM_PASSWORD})
    assert done.status_code == 200 and b"password is changed" in done.data
    assert login(alice, victim, VICTIM_PASSWORD).status_code == 302
    key, _, _ = create_key(alice)

    # The attacker: the session opened with the old password has ended, the kept link is dead.
    assert mallory.get("/portal/dashboard").status_code == 302
    opened = mallory.get(f"/portal/email/confirm?token={kept_link}")
    assert opened.status_code == 400 and b"no longer valid" in opened.data
    assert email_of(portal_app, account.id) == victim
    assert login(mallory, victim, ATTACKER_PASSWORD).status_code == 401
    assert alice.get("/v1/geocoding?query=Helsinki", headers={"X-API-Key": key}).status_code in (200, 404)
    # the victim's own mails have all arrived (one worker, in order): no change link went out
    assert mailbox.messages(attacker) == []


def test_confirming_an_email_change_never_switches_the_session(portal_app, portal_worker, mailbox):
    """A signed-in victim opens the change link of the attacker's own account: the change is
    confirmed, and the victim stays signed in as the victim (before: as the attacker)."""
    victim, victim_id = make_user(portal_app)
    attacker, attacker_id = make_user(portal_app)
    mallory, alice = portal_app.test_client(), portal_app.test_client()
    login(mallory, attacker)
    new = fresh_email()
    asked = settings_post(mallory, {"action": "email", "em-email": new, "em-current": PASSWORD})
    assert asked.status_code == 200 and b"confirmation link" in asked.data
    link = path_of(mailbox.wait(new))
    login(alice, victim)
    opened = alice.get(link)
    page = alice.get("/portal/settings")
    assert page.status_code == 200 and victim.encode() in page.data and new.encode() not in page.data
    assert opened.status_code == 200 and b"Sign in with it" in opened.data
    assert email_of(portal_app, attacker_id) == new
    # nobody is signed in by a link either
    stranger = portal_app.test_client()
    assert stranger.get(link).status_code == 400  # used
    assert stranger.get("/portal/dashboard").status_code == 302
    assert email_of(portal_app, victim_id) == victim


def test_the_owner_opening_the_change_link_stays_signed_in(portal_app, portal_worker, mailbox):
    email, account_id = make_user(portal_app)
    client = portal_app.test_client()
    login(client, email)
    new = fresh_email()
    settings_post(client, {"action": "email", "em-email": new, "em-current": PASSWORD})
    opened = client.get(path_of(mailbox.wait(new)))
    assert opened.status_code == 200 and b"Your e-mail address is now" in opened.data
    page = client.get("/portal/settings")
    assert page.status_code == 200 and new.encode() in page.data
    assert email_of(portal_app, account_id) == new


def test_superseded_and_used_links_answer_a_clean_page(portal_app, portal_worker, mailbox):
    """A reset link dies when another reset succeeds; a verification link dies with it."""
    email, _ = make_user(portal_app, verified=False)
    client = portal_app.test_client()
    login(client, email)
    client.post("/portal/verify/resend", data={"csrf_token": csrf(client.get("/portal/dashboard").data)})
    verify_link = path_of(mailbox.wait(email))
    for _ in range(2):
        assert post(client, "/portal/reset", {"email": email}, page="/portal/reset").status_code == 200
    first, second = (path_of(m) for m in mailbox.wait_for(email, 2, subject=RESET_SUBJECT))  # either order
    form = client.get(second)
    done = client.post(second, data={"csrf_token": csrf(form.data), "password": "brand new pass 2"})
    assert done.status_code == 200
    for link, why in ((first, b"no longer valid"), (verify_link, b"no longer valid"), (second, b"already been used")):
        page = client.get(link)
        assert page.status_code == 400 and why in page.data and b"This link cannot be used" in page.data
    late = client.post(first, data={"csrf_token": csrf(client.get("/portal/login").data), "password": "x pass 3"})
    assert late.status_code == 400 and b"no longer valid" in late.data


# ---------------------------------------------------------------- finding 9
def test_a_cookie_copied_before_logout_opens_nothing_after_it(portal_app):
    email, _ = make_user(portal_app)
    owner = portal_app.test_client()
    assert login(owner, email).status_code == 302
    copied = owner.get_cookie("meridian_portal", path="/portal").value
    thief = portal_app.test_client()
    thief.set_cookie("meridian_portal", copied, path="/portal")
    assert thief.get("/portal/dashboard").status_code == 200
    logout = owner.post("/portal/logout", data={"csrf_token": csrf(owner.get("/portal/dashboard").data)})
    assert logout.status_code == 302
    assert thief.get("/portal/dashboard").status_code == 302
    assert login(owner, email).status_code == 302 and owner.get("/portal/dashboard").status_code == 200


def test_the_current_password_check_of_the_settings_page_is_attempt_limited(portal_app):
    email, _ = make_user(portal_app)
    client = portal_app.test_client()
    login(client, email)  # one attempt of the 5 per window (PORTAL_LOGIN_LIMIT=5/300 in the tests)
    statuses = [
        settings_post(client, {"action": "password", "pw-current": "wrong pass 9", "pw-password": "new pass 99"})
        for _ in range(5)
    ]
    assert [r.status_code for r in statuses] == [400] * 4 + [429]
    assert b"Too many attempts" in statuses[-1].data and int(statuses[-1].headers["Retry-After"]) > 0


# ---------------------------------------------------------------- low items
def test_a_strangers_wrong_passwords_do_not_lock_the_owner_out(portal_app):
    email, _ = make_user(portal_app)
    stranger, owner = portal_app.test_client(), portal_app.test_client()
    statuses = [login(stranger, email, "wrong password 1").status_code for _ in range(6)]
    assert statuses == [401] * 5 + [429]
    owner.environ_base.update(OTHER_SOURCE)
    assert login(owner, email).status_code == 302
    assert login(stranger, email).status_code == 429  # the stranger's source stays slowed down


@pytest.mark.parametrize("target", ["/portal/keys%0D%0ASet-Cookie:%20x=1", "/portal/keys%0Aa", "/portal/%09keys"])
def test_next_with_control_characters_redirects_to_the_dashboard(portal_app, target):
    email, _ = make_user(portal_app)
    client = portal_app.test_client()
    token = csrf(client.get("/portal/login").data)
    resp = client.post(f"/portal/login?next={target}", data={"csrf_token": token, "email": email, "password": PASSWORD})
    assert resp.status_code == 302 and resp.headers["Location"] == "/portal/dashboard"
    assert "x=1" not in resp.headers.get("Set-Cookie", "")


def test_a_reset_request_queues_one_mail_whether_the_address_has_an_account_or_not(portal_app, portal_worker, mailbox):
    """Both paths compose and queue one mail (the same work, so the same time)."""
    known, _ = make_user(portal_app)
    unknown = fresh_email()
    client = portal_app.test_client()
    for email in (known, unknown):
        assert post(client, "/portal/reset", {"email": email}, page="/portal/reset").status_code == 200
    assert "/portal/reset/confirm?token=" in link_in(mailbox.wait(known))
    note = mailbox.wait(unknown)
    assert note["Subject"] == "Meridian password reset: no account uses this address"
    assert link_in(note) == "http://localhost/portal/signup"

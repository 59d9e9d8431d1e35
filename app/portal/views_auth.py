"""Sign-up, e-mail verification, sign-in and out, password reset, account settings.

No enumeration: sign-up, sign-in and reset answer the same page, status and (as far as the work
goes) time whether the address has an account or not: a reset request composes and queues one
mail either way (a link, or "no account uses this address"). Passwords and tokens never reach a
log.

Mail links are bound to the account's state (``accounts/tokens.py``); the pages that redeem them
never sign anyone in. A link that cannot be used offers a new one: a new confirmation link (to the
signed-in account's address, or asked for by address and answered the same whether an account
waits for it or not), the reset request form, or the settings page. An e-mail change needs a
verified address and the current password.

Each form is validated as a whole: every field's problem is shown next to the field at once
(``forms.py``); only what concerns the whole form (a wrong password at sign-in) is shown above it.
"""

from __future__ import annotations

from typing import Any

from flask import Response, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response as WerkzeugResponse

from accounts.passwords import PASSWORD_RULE, verify_dummy
from accounts.store import AccountError
from accounts.tokens import EMAIL, RESET, VERIFY, TokenError
from accounts.users import User, normalize_email
from app.portal.blueprint import bp, current_user, limited, login_required, safe_next, sign_in, sign_out
from app.portal.forms import (
    ChangeEmailForm,
    ChangePasswordForm,
    EmailForm,
    LoginForm,
    NewPasswordForm,
    SignUpForm,
    add_error,
)
from app.portal.mails import compose
from app.portal.services import portal
from config.portal import RateLimit

Page = str | Response | WerkzeugResponse | tuple[str, int] | tuple[str, int, dict[str, str]]


def _link(endpoint: str, token: str) -> str:
    """The link of a mail. The token is in the query string, which the request log leaves out."""
    return f"{portal().settings.base_url}{url_for(endpoint, token=token)}"


def _send_verification(user: User) -> bool:
    p = portal()
    token = p.signer.issue(VERIFY, user)
    return p.queue_mail(compose("verify", user.email or "", link=_link("portal.verify", token)))


def _reset_mail(address: str, user: User | None) -> dict[str, str]:
    """The reset mail for ``address``: a link for an active account, else a note saying no account
    uses it. Composed and queued the same way in both cases, so both cost the same."""
    if user is not None and not user.disabled:
        return compose("reset", address, link=_link("portal.reset_confirm", portal().signer.issue(RESET, user)))
    return compose("reset_unknown", address, link=f"{portal().settings.base_url}{url_for('portal.signup')}")


def _link_refused(exc: TokenError, purpose: str) -> tuple[str, int]:
    """The page of a link that cannot be used (expired, used, superseded, tampered), with the way to
    a new one for the link's ``purpose``."""
    form = EmailForm(formdata=None) if purpose == VERIFY and current_user() is None else None
    return render_template("portal/verified.html", ok=False, message=str(exc), again=purpose, form=form), 400


def _check_mail_page(email: str, queued: bool, status: int = 200, *, maybe: bool = False) -> tuple[str, int]:
    """``maybe``: the address was typed in, the page must not tell whether an account uses it."""
    return render_template("portal/check_mail.html", email=email, queued=queued, maybe=maybe), status


def _form_page(template: str, forms: tuple[FlaskForm, ...], errors: list[str], bad: int = 400, **context: Any) -> Page:
    """A form page; ``bad`` is its status when a form-level message or a field has a problem."""
    status = bad if errors or any(form.errors for form in forms) else 200
    return render_template(template, errors=errors, **context), status


def _posted_address(form: FlaskForm, action: str, limit: RateLimit) -> tuple[Page | None, str | None]:
    """The POST of a form that sends mail to its ``email``: (the limit's page, None) when over the
    limit (counted per address, failing closed), else (None, the normalized address) when every
    field is valid, else (None, None) and the problems are on the fields."""
    email = (form.email.data or "").strip()
    blocked = limited(action, limit, email or None, fail_open=False)
    if blocked:
        return blocked, None
    return None, (normalize_email(email) if form.validate() else None)


@bp.route("/")
def home() -> Page:
    return redirect(url_for("portal.dashboard" if current_user() else "portal.login"))


@bp.route("/signup", methods=["GET", "POST"])
def signup() -> Page:
    form = SignUpForm()
    if request.method == "POST":
        # the address and the password rule are validators of the form (forms.py)
        blocked, address = _posted_address(form, "signup", portal().settings.signup_limit)
        if blocked:
            return blocked
        if address is not None:
            user = portal().users.sign_up(address, form.password.data or "")
            if user is not None:
                queued = _send_verification(user)
            else:  # taken: tell the owner, answer exactly as for a new address
                queued = portal().queue_mail(
                    compose("already", address, link=f"{portal().settings.base_url}{url_for('portal.reset')}")
                )
            return _check_mail_page(address, queued)
    return _form_page("portal/signup.html", (form,), [], form=form, rule=PASSWORD_RULE)


@bp.route("/verify")
def verify() -> Page:
    token = request.args.get("token", "")
    p = portal()
    try:
        p.users.verify_by_link(p.signer, token)
    except TokenError as exc:
        return _link_refused(exc, VERIFY)
    return render_template("portal/verified.html", ok=True, message="Your e-mail address is confirmed.")


@bp.route("/verify/resend", methods=["POST"])
@login_required
def resend() -> Page:
    user = current_user()
    assert user is not None
    if user.verified:
        return redirect(url_for("portal.dashboard"))
    blocked = limited("resend", portal().settings.signup_limit, user.email, fail_open=False)
    if blocked:
        return blocked
    return _check_mail_page(user.email or "", _send_verification(user))


@bp.route("/verify/again", methods=["GET", "POST"])
def verify_again() -> Page:
    """A new confirmation link, asked for by address (no session needed). The answer, and the work
    behind it (one mail composed and queued), are the same whether an unconfirmed account uses the
    address or not: a link, or a note saying no account waits for confirmation at this address."""
    form = EmailForm()
    if request.method == "POST":
        blocked, address = _posted_address(form, "resend", portal().settings.signup_limit)
        if blocked:
            return blocked
        if address is not None:
            user = portal().users.by_email(address)
            if user is not None and not user.verified and not user.disabled:
                queued = _send_verification(user)
            else:
                link = f"{portal().settings.base_url}{url_for('portal.signup')}"
                queued = portal().queue_mail(compose("verify_unknown", address, link=link))
            return _check_mail_page(address, queued, maybe=True)
    return _form_page("portal/verify_again.html", (form,), [], form=form)


@bp.route("/login", methods=["GET", "POST"])
def login() -> Page:
    form = LoginForm()
    errors: list[str] = []  # about the whole form; a field's own problem stays on the field
    if request.method == "POST":
        email = (form.email.data or "").strip()
        # Redis down: sign-in still works (fail open); the other limits fail closed.
        blocked = _password_attempt(email)
        if blocked:
            return blocked
        if form.validate():
            user = portal().users.authenticate(email, form.password.data or "")
            if user is not None and user.disabled:
                errors.append("This account is disabled. Contact the operator of this Meridian.")
            elif user is not None:
                sign_in(user)
                return redirect(safe_next(request.args.get("next")))
            else:
                errors.append("E-mail address or password is wrong.")
        else:
            verify_dummy()  # an incomplete form costs what a wrong password costs
    return _form_page("portal/login.html", (form,), errors, bad=401, form=form)


def _password_attempt(address: str) -> Page | None:
    """The attempt limit of every password check (sign-in, the settings page), per client IP and
    address: a stranger's wrong guesses never lock the owner out from another address."""
    return limited("login", portal().settings.login_limit, address or None, fail_open=True, per_source=True)


@bp.route("/logout", methods=["POST"])
def logout() -> Page:
    sign_out()
    return redirect(url_for("portal.login"))


@bp.route("/reset", methods=["GET", "POST"])
def reset() -> Page:
    form = EmailForm()
    if request.method == "POST":
        blocked, address = _posted_address(form, "reset", portal().settings.reset_limit)
        if blocked:
            return blocked
        if address is not None:
            queued = portal().queue_mail(_reset_mail(address, portal().users.by_email(address)))
            return render_template("portal/reset_sent.html", email=address, queued=queued)
    return _form_page("portal/reset.html", (form,), [], form=form)


@bp.route("/reset/confirm", methods=["GET", "POST"])
def reset_confirm() -> Page:
    token = request.args.get("token", "")
    p = portal()
    form = NewPasswordForm()
    try:
        p.signer.read(token, RESET)
    except TokenError as exc:
        return _link_refused(exc, RESET)
    if request.method == "POST" and form.validate():
        try:
            # verifies the address too (the mail reached its owner) and ends every session
            p.users.reset_by_link(p.signer, token, form.password.data or "")
        except AccountError as exc:
            add_error(form.password, str(exc))
        except TokenError as exc:
            return _link_refused(exc, RESET)
        else:
            return render_template("portal/verified.html", ok=True, message="Your password is changed. Sign in.")
    return _form_page("portal/reset_confirm.html", (form,), [], form=form, rule=PASSWORD_RULE)


@bp.route("/settings", methods=["GET", "POST"])
@login_required
def settings() -> Page:
    user = current_user()
    assert user is not None
    p = portal()
    pw_form, email_form = ChangePasswordForm(prefix="pw"), ChangeEmailForm(prefix="em")
    notice = None
    if request.method == "POST":
        form = pw_form if request.form.get("action") == "password" else email_form
        valid = form.validate()
        if form is email_form and not user.verified:
            # an unconfirmed address may belong to someone else: it cannot be moved away from
            add_error(
                email_form.email,
                "confirm your current address first (open the link we sent to it, or send it again from the "
                "dashboard); then you can change it",
            )
        elif not valid:
            pass  # every field's problem is on the field
        elif blocked := _password_attempt(user.email or ""):
            return blocked
        elif p.users.authenticate(user.email or "", form.current.data or "") is None:
            add_error(form.current, "the current password is wrong")
        elif form is pw_form:
            try:
                p.users.set_password(user.id, pw_form.password.data or "")
            except AccountError as exc:
                add_error(pw_form.password, str(exc))
            else:
                fresh = p.users.get(user.id)
                assert fresh is not None
                sign_in(fresh)  # this session stays (with the new generation); every other one ends
                notice = "Password changed. Other sessions are signed out."
        else:
            address = normalize_email(email_form.email.data or "")
            queued = True
            if address != user.email and not p.users.email_taken(address):
                token = p.signer.issue(EMAIL, user, email=address)
                queued = p.queue_mail(compose("change", address, link=_link("portal.email_confirm", token)))
            # the same answer whether the address is taken or not
            notice = (
                f"We sent a confirmation link to {address}. The change takes effect when you open it."
                if queued
                else "The confirmation mail could not be queued right now; please try again in a minute."
            )
    return _form_page(
        "portal/settings.html",
        (pw_form, email_form),
        [],
        user=user,
        pw_form=pw_form,
        email_form=email_form,
        notice=notice,
        rule=PASSWORD_RULE,
    )


@bp.route("/email/confirm")
def email_confirm() -> Page:
    token = request.args.get("token", "")
    p = portal()
    try:
        content = p.users.change_email_by_link(p.signer, token)
    except TokenError as exc:
        return _link_refused(exc, EMAIL)
    except AccountError as exc:
        return render_template("portal/verified.html", ok=False, message=str(exc).removeprefix("email: ")), 409
    # Nobody is signed in or switched here: a link can be opened in anyone's browser. A session of
    # this account stays; anyone else is asked to sign in.
    user = current_user()
    if user is not None and user.id == content.account_id:
        return render_template("portal/verified.html", ok=True, message=f"Your e-mail address is now {content.email}.")
    return render_template(
        "portal/verified.html",
        ok=True,
        message=f"The e-mail address of the account is now {content.email}. Sign in with it to continue.",
        sign_in=True,
    )

"""Sign-up, e-mail verification, sign-in and out, password reset, account settings.

No enumeration: sign-up, sign-in and reset answer the same page, status and (as far as the work
goes) time whether the address has an account or not. Passwords and tokens never reach a log.
"""

from __future__ import annotations

from flask import Response, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as WerkzeugResponse

from accounts.passwords import PASSWORD_RULE, password_problem, verify_dummy
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
    form_errors,
)
from app.portal.mails import compose
from app.portal.services import portal

Page = str | Response | WerkzeugResponse | tuple[str, int] | tuple[str, int, dict[str, str]]


def _link(endpoint: str, token: str) -> str:
    """The link of a mail. The token is in the query string, which the request log leaves out."""
    return f"{portal().settings.base_url}{url_for(endpoint, token=token)}"


def _send_verification(user: User) -> bool:
    p = portal()
    token = p.signer.issue(VERIFY, user.id)
    return p.queue_mail(compose("verify", user.email or "", link=_link("portal.verify", token)))


def _check_mail_page(email: str, queued: bool, status: int = 200) -> tuple[str, int]:
    return render_template("portal/check_mail.html", email=email, queued=queued), status


@bp.route("/")
def home() -> Page:
    return redirect(url_for("portal.dashboard" if current_user() else "portal.login"))


@bp.route("/signup", methods=["GET", "POST"])
def signup() -> Page:
    form = SignUpForm()
    errors: list[str] = []
    if request.method == "POST":
        email = (form.email.data or "").strip()
        blocked = limited("signup", portal().settings.signup_limit, email or None, fail_open=False)
        if blocked:
            return blocked
        if form.validate():
            try:
                address = normalize_email(email)
                problem = password_problem(form.password.data or "")
                if problem:
                    raise AccountError(problem)
            except AccountError as exc:
                errors.append(str(exc))
            else:
                user = portal().users.sign_up(address, form.password.data or "")
                if user is not None:
                    queued = _send_verification(user)
                else:  # taken: tell the owner, answer exactly as for a new address
                    queued = portal().queue_mail(
                        compose("already", address, link=f"{portal().settings.base_url}{url_for('portal.reset')}")
                    )
                return _check_mail_page(address, queued)
        else:
            errors.extend(form_errors(form))
    status = 400 if errors else 200
    return render_template("portal/signup.html", form=form, errors=errors, rule=PASSWORD_RULE), status


@bp.route("/verify")
def verify() -> Page:
    token = request.args.get("token", "")
    p = portal()
    try:
        content = p.signer.consume(token, VERIFY)
    except TokenError as exc:
        return render_template("portal/verified.html", ok=False, message=str(exc)), 400
    p.users.mark_verified(content.account_id)
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


@bp.route("/login", methods=["GET", "POST"])
def login() -> Page:
    form = LoginForm()
    errors: list[str] = []
    if request.method == "POST":
        email = (form.email.data or "").strip()
        # Redis down: sign-in still works (fail open); the other limits fail closed.
        blocked = limited("login", portal().settings.login_limit, email or None, fail_open=True)
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
            errors.extend(form_errors(form))
    return render_template("portal/login.html", form=form, errors=errors), (401 if errors else 200)


@bp.route("/logout", methods=["POST"])
def logout() -> Page:
    sign_out()
    return redirect(url_for("portal.login"))


@bp.route("/reset", methods=["GET", "POST"])
def reset() -> Page:
    form = EmailForm()
    errors: list[str] = []
    if request.method == "POST":
        email = (form.email.data or "").strip()
        blocked = limited("reset", portal().settings.reset_limit, email or None, fail_open=False)
        if blocked:
            return blocked
        if form.validate():
            try:
                address = normalize_email(email)
            except AccountError as exc:
                errors.append(str(exc))
            else:
                user = portal().users.by_email(address)
                queued = True
                if user is not None and not user.disabled:
                    token = portal().signer.issue(RESET, user.id)
                    queued = portal().queue_mail(compose("reset", address, link=_link("portal.reset_confirm", token)))
                return render_template("portal/reset_sent.html", email=address, queued=queued)
        else:
            errors.extend(form_errors(form))
    return render_template("portal/reset.html", form=form, errors=errors), (400 if errors else 200)


@bp.route("/reset/confirm", methods=["GET", "POST"])
def reset_confirm() -> Page:
    token = request.args.get("token", "")
    p = portal()
    form = NewPasswordForm()
    errors: list[str] = []
    try:
        content = p.signer.read(token, RESET)
    except TokenError as exc:
        return render_template("portal/verified.html", ok=False, message=str(exc)), 400
    if request.method == "POST" and form.validate():
        problem = password_problem(form.password.data or "")
        if problem:
            errors.append(problem)
        else:
            try:
                p.signer.consume(token, RESET)
            except TokenError as exc:
                return render_template("portal/verified.html", ok=False, message=str(exc)), 400
            p.users.set_password(content.account_id, form.password.data or "")
            p.users.mark_verified(content.account_id)  # the mail reached its owner
            sign_out()
            return render_template("portal/verified.html", ok=True, message="Your password is changed. Sign in.")
    elif request.method == "POST":
        errors.extend(form_errors(form))
    return render_template("portal/reset_confirm.html", form=form, errors=errors, rule=PASSWORD_RULE), (
        400 if errors else 200
    )


@bp.route("/settings", methods=["GET", "POST"])
@login_required
def settings() -> Page:
    user = current_user()
    assert user is not None
    p = portal()
    pw_form, email_form = ChangePasswordForm(prefix="pw"), ChangeEmailForm(prefix="em")
    errors: list[str] = []
    notice = None
    if request.method == "POST":
        form = pw_form if request.form.get("action") == "password" else email_form
        if not form.validate():
            errors.extend(form_errors(form))
        elif p.users.authenticate(user.email or "", form.current.data or "") is None:
            errors.append("current: the current password is wrong")
        elif form is pw_form:
            try:
                p.users.set_password(user.id, pw_form.password.data or "")
            except AccountError as exc:
                errors.append(str(exc))
            else:
                fresh = p.users.get(user.id)
                assert fresh is not None
                sign_in(fresh)  # this session stays; every other one is signed out
                notice = "Password changed. Other sessions are signed out."
        else:
            try:
                address = normalize_email(email_form.email.data or "")
            except AccountError as exc:
                errors.append(str(exc))
            else:
                queued = True
                if address != user.email and not p.users.email_taken(address):
                    token = p.signer.issue(EMAIL, user.id, email=address)
                    queued = p.queue_mail(compose("change", address, link=_link("portal.email_confirm", token)))
                # the same answer whether the address is taken or not
                notice = (
                    f"We sent a confirmation link to {address}. The change takes effect when you open it."
                    if queued
                    else "The confirmation mail could not be queued right now; please try again in a minute."
                )
    status = 400 if errors else 200
    return render_template(
        "portal/settings.html",
        user=user,
        pw_form=pw_form,
        email_form=email_form,
        errors=errors,
        notice=notice,
        rule=PASSWORD_RULE,
    ), status


@bp.route("/email/confirm")
def email_confirm() -> Page:
    token = request.args.get("token", "")
    p = portal()
    try:
        content = p.signer.consume(token, EMAIL)
    except TokenError as exc:
        return render_template("portal/verified.html", ok=False, message=str(exc)), 400
    if not content.email or not p.users.change_email(content.account_id, content.email):
        return render_template(
            "portal/verified.html", ok=False, message="That address is now used by another account."
        ), 409
    user = p.users.get(content.account_id)
    if user is not None and current_user() is not None:
        sign_in(user)
    return render_template("portal/verified.html", ok=True, message=f"Your e-mail address is now {content.email}.")

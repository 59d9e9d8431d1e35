"""The portal's forms (WTForms via Flask-WTF). The CSRF token of every POST is checked once for
the whole blueprint (``blueprint._check_csrf``), so the forms themselves do not repeat it."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import BooleanField, EmailField, IntegerField, PasswordField, SelectMultipleField, StringField
from wtforms.fields import DateField
from wtforms.validators import DataRequired, InputRequired, Length, NumberRange, Optional
from wtforms.widgets import CheckboxInput, ListWidget

from accounts.passwords import MAX_LENGTH as PASSWORD_MAX
from accounts.users import MAX_EMAIL_LENGTH


class PortalForm(FlaskForm):  # type: ignore[misc]  # flask-wtf ships no type hints: FlaskForm is Any to mypy
    class Meta:
        csrf = False  # checked by the blueprint for every POST


def _email() -> EmailField:
    return EmailField("E-mail address", validators=[DataRequired("email: required"), Length(max=MAX_EMAIL_LENGTH)])


class SignUpForm(PortalForm):
    email = _email()
    password = PasswordField("Password", validators=[DataRequired("password: required"), Length(max=PASSWORD_MAX)])
    terms = BooleanField("I accept the terms of use", validators=[DataRequired("terms: please accept the terms")])


class LoginForm(PortalForm):
    email = _email()
    password = PasswordField("Password", validators=[DataRequired("password: required"), Length(max=PASSWORD_MAX)])


class EmailForm(PortalForm):
    email = _email()


class NewPasswordForm(PortalForm):
    password = PasswordField("New password", validators=[DataRequired("password: required"), Length(max=PASSWORD_MAX)])


class ChangePasswordForm(PortalForm):
    current = PasswordField("Current password", validators=[DataRequired("current: required")])
    password = PasswordField("New password", validators=[DataRequired("password: required"), Length(max=PASSWORD_MAX)])


class ChangeEmailForm(PortalForm):
    email = _email()
    current = PasswordField("Current password", validators=[DataRequired("current: required")])


def form_errors(form: FlaskForm) -> list[str]:
    """Every message of a form that did not validate, field by field."""
    return [message for messages in form.errors.values() for message in messages]


class MultiCheckbox(SelectMultipleField):  # type: ignore[misc]  # wtforms ships no type hints: Any to mypy
    widget = ListWidget(prefix_label=False)
    option_widget = CheckboxInput()


class KeyForm(PortalForm):
    label = StringField("Label", validators=[Optional(), Length(max=100)])
    scopes = MultiCheckbox("Services (none ticked: every service of your plan)", choices=[])
    expires = DateField("Expires on (optional)", validators=[Optional()])


class RotateForm(PortalForm):
    grace_hours = IntegerField(
        "Keep the old key working for (hours, at most 168)",
        default=24,
        validators=[InputRequired("grace_hours: required"), NumberRange(0, 168, "grace_hours: between 0 and 168")],
    )


class PlanForm(PortalForm):
    plan = StringField("Plan", validators=[DataRequired("plan: required"), Length(max=64)])

"""The portal's forms (WTForms via Flask-WTF). The CSRF token of every POST is checked once for
the whole blueprint (``blueprint._check_csrf``), so the forms themselves do not repeat it.

Every check of a field is a validator of the form, so one ``validate()`` finds every problem at
once; each message stays on its field (``field.errors``) and the ``field`` macro of
``templates/portal/macros.html`` shows it next to the field, marked for assistive technology."""

from __future__ import annotations

from datetime import UTC, datetime

from flask_wtf import FlaskForm
from wtforms import BooleanField, EmailField, IntegerField, PasswordField, SelectMultipleField, StringField
from wtforms.fields import DateField, Field
from wtforms.validators import DataRequired, InputRequired, Length, NumberRange, Optional, ValidationError
from wtforms.widgets import CheckboxInput, ListWidget

from accounts.passwords import MAX_LENGTH as PASSWORD_MAX
from accounts.passwords import password_problem
from accounts.store import AccountError
from accounts.users import MAX_EMAIL_LENGTH, normalize_email


class PortalForm(FlaskForm):  # type: ignore[misc]  # flask-wtf ships no type hints: FlaskForm is Any to mypy
    class Meta:
        csrf = False  # checked by the blueprint for every POST


def without_field_name(message: str) -> str:
    """``"email: not a valid address"`` -> ``"not a valid address"``: next to its field, a message
    need not name it (the account layer's messages name it for the CLI and the API)."""
    name, sep, rest = message.partition(": ")
    return rest if sep and name.isidentifier() else message


def add_error(field: Field, message: str) -> None:
    """A problem found after ``validate()`` (a wrong current password, ...), shown on its field."""
    field.errors = [*field.errors, without_field_name(message)]


def _valid_email(form: FlaskForm, field: Field) -> None:
    if field.data:
        try:
            normalize_email(field.data)
        except AccountError as exc:
            raise ValidationError(without_field_name(str(exc))) from None


def _strong_password(form: FlaskForm, field: Field) -> None:
    problem = password_problem(field.data or "") if field.data else None
    if problem:
        raise ValidationError(problem)


def _email() -> EmailField:
    return EmailField(
        "E-mail address", validators=[DataRequired("required"), Length(max=MAX_EMAIL_LENGTH), _valid_email]
    )


def _new_password(label: str) -> PasswordField:
    return PasswordField(label, validators=[DataRequired("required"), Length(max=PASSWORD_MAX), _strong_password])


class SignUpForm(PortalForm):
    email = _email()
    password = _new_password("Password")
    terms = BooleanField("I accept the terms of use", validators=[DataRequired("please accept the terms")])


class LoginForm(PortalForm):
    email = _email()
    password = PasswordField("Password", validators=[DataRequired("required"), Length(max=PASSWORD_MAX)])


class EmailForm(PortalForm):
    email = _email()


class NewPasswordForm(PortalForm):
    password = _new_password("New password")


class ChangePasswordForm(PortalForm):
    current = PasswordField("Current password", validators=[DataRequired("required")])
    password = _new_password("New password")


class ChangeEmailForm(PortalForm):
    email = _email()
    current = PasswordField("Current password", validators=[DataRequired("required")])


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

    def validate_expires(self, field: Field) -> None:
        if field.data is not None and field.data <= datetime.now(UTC).date():
            raise ValidationError("the date must be in the future")


class RotateForm(PortalForm):
    grace_hours = IntegerField(
        "Keep the old key working for (hours, at most 168)",
        default=24,
        validators=[InputRequired("grace_hours: required"), NumberRange(0, 168, "grace_hours: between 0 and 168")],
    )


class PlanForm(PortalForm):
    plan = StringField("Plan", validators=[DataRequired("plan: required"), Length(max=64)])

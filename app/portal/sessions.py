"""Signed-cookie sessions for the portal's pages only.

Flask opens the session of every request; the API faces never use one, and building the cookie
serializer for each of their requests is pure cost. Outside ``SESSION_COOKIE_PATH`` (``/portal``)
this interface hands Flask its null session, which refuses writes, and saves nothing."""

from __future__ import annotations

from flask import Flask, Request, Response
from flask.sessions import SecureCookieSession, SecureCookieSessionInterface, SessionMixin


class PortalSessionInterface(SecureCookieSessionInterface):
    def _in_portal(self, app: Flask, path: str) -> bool:
        prefix = str(app.config["SESSION_COOKIE_PATH"]).rstrip("/")
        return path == prefix or path.startswith(prefix + "/")

    def open_session(self, app: Flask, request: Request) -> SecureCookieSession | None:
        if not self._in_portal(app, request.path):
            return self.make_null_session(app)
        return super().open_session(app, request)

    def save_session(self, app: Flask, session: SessionMixin, response: Response) -> None:
        if self.is_null_session(session):
            return
        super().save_session(app, session, response)

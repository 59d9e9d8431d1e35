"""Swagger UI at /api in real headless Chromium: loads offline with zero failed requests, lists
the /v1 operations, and "Authorize" + "Try it out" call the API. Screenshot kept in tests/artifacts."""

from __future__ import annotations

import pytest

from config.settings import PROJECT_ROOT
from tests.browser import chromium

pytestmark = [pytest.mark.integration, pytest.mark.browser]
ARTIFACTS = PROJECT_ROOT / "tests" / "artifacts"


def test_swagger_ui_offline_authorize_try_it_out(live_server, api_key):
    failed, bad_status = [], []
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 1600})
        page.on("requestfailed", lambda r: failed.append(r.url))
        page.on("response", lambda r: bad_status.append((r.status, r.url)) if r.status >= 400 else None)
        page.goto(f"{live_server}/api", wait_until="networkidle")
        page.wait_for_selector(".opblock", timeout=20_000)
        paths = page.locator(".opblock-summary-path").all_inner_texts()
        assert any("/v1/geocoding" in p for p in paths), paths
        # Authorize with the API key.
        page.click("button.authorize")
        page.fill(".auth-container input", api_key)
        page.click(".auth-btn-wrapper button.authorize")
        page.click("button.btn-done")
        # Try it out on /v1/geocoding.
        block = page.locator(".opblock-get", has=page.locator(".opblock-summary-path", has_text="/v1/geocoding")).first
        block.locator(".opblock-summary").click()
        block.locator("button.try-out__btn").click()
        # Swagger UI pre-fills every parameter with its example; keep the free-text form only
        # (query and structured parameters are mutually exclusive).
        for row in block.locator("tr[data-param-name] input").all():
            row.fill("")
        block.locator("tr[data-param-name='query'] input").fill("Aleksanterinkatu 52")
        block.locator("button.execute").click()
        status = block.locator(".live-responses-table tbody .response-col_status").first
        status.wait_for(timeout=20_000)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        block.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "swagger-ui.png"), full_page=False)
        assert status.inner_text().strip().startswith("200"), status.inner_text()
    assert failed == [], failed
    assert bad_status == [], bad_status

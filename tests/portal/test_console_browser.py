"""The console's matrix and optimisation views (issue 30, item 3) and a walking route and isochrone
drawn in it (issue 29), in real headless Chromium against gunicorn, with a key of a standard plan:
the table is the API's answer cell by cell and a cell lights its two points on the map; the plan
draws one coloured route per used vehicle and lists each vehicle's steps. Screenshots go to
/tmp/portal-shots/ like the other portal pages' (docs/renders/portal/ holds copies)."""

from __future__ import annotations

import base64
import io
import json

import pytest
import requests
from PIL import Image

from app.portal.console_many import EXAMPLE, SOURCE_COLOUR, VEHICLE_COLOURS, clock, distance_text, duration_text
from app.portal.services import portal
from engine.render.staticmap import PIN_HEAD_PX
from tests.portal.test_pages import make_user
from tests.portal.test_portal_browser import portal_server  # noqa: F401  (the gunicorn fixture)
from tests.portal.test_portal_ui_browser import (  # noqa: F401  (browser: the Chromium fixture)
    PHONE,
    browser,
    create_key,
    no_page_overflow,
    shoot,
    signed_in,
)

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.slow]
THREE = ((43.7312, 7.4197), (43.7384, 7.4246), (43.7406, 7.4270))


@pytest.fixture(scope="module")
def console(browser, portal_server, portal_app):  # noqa: F811
    """(base URL, a signed-in page, a key, the address) of an account on the standard plan."""
    base, _ = portal_server
    email, account_id = make_user(portal_app)
    with portal_app.app_context():
        portal().users.set_plan(account_id, "standard")
    page = signed_in(browser, base, email)
    return base, page, create_key(page, base, "console"), email


def send(page, base: str, fn: str, key: str, **fields: str) -> None:
    """Fill the function's form (a fixed choice is a selector) and wait for the answer."""
    page.goto(f"{base}/portal/console?fn={fn}")
    page.fill("#key", key)
    for name, value in fields.items():
        field = page.locator(f"#p-{name}")
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    page.click("button[type=submit]:has-text('Send')", no_wait_after=True)
    page.wait_for_selector("#result", timeout=120_000)


def map_image(page) -> Image.Image:
    """The static map the console drew (the image itself, without what the page draws over it)."""
    src = page.get_attribute("#answer-map", "src")
    assert src and src.startswith("data:image/png;base64,")
    return Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))).convert("RGB")


def rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def near(pixel: tuple[int, ...], colour: str, tolerance: int = 45) -> bool:
    """A pixel of ``colour`` drawn at the map's 85 % opacity over any background."""
    return max(abs(a - b) for a, b in zip(pixel, rgb(colour), strict=False)) <= tolerance


def test_matrix_table_is_the_apis_answer_and_a_cell_lights_its_two_points(console):
    base, page, key, _ = console
    send(page, base, "matrix", key, sources="\n".join(f"{lat},{lng}" for lat, lng in THREE), profile="car")
    assert page.inner_text("#result .status") == "200"
    body = {"sources": [{"lat": lat, "lng": lng} for lat, lng in THREE], "profile": "car"}
    api = requests.post(f"{base}/v1/matrix", json=body, headers={"X-API-Key": key}, timeout=60).json()
    assert api["durations"] != [
        list(r) for r in zip(*api["durations"], strict=True)
    ]  # one-ways: a transposed table fails
    rows = page.locator("#matrix-table tbody tr")
    assert rows.count() == 3 and page.locator("#matrix-table thead th[scope=col]").count() == 3
    for i in range(3):
        cells = rows.nth(i).locator("td.cell")
        assert cells.count() == 3
        for j in range(3):
            cell = cells.nth(j)
            assert float(cell.get_attribute("data-duration")) == api["durations"][i][j]
            assert float(cell.get_attribute("data-distance")) == api["distances"][i][j]
            assert cell.locator(".duration").inner_text() == duration_text(api["durations"][i][j])
            assert cell.locator(".distance").inner_text() == distance_text(api["distances"][i][j])
    # the numbered points sit on the map's pins: below each badge the image is the sources' red
    image, overlay = map_image(page), page.locator("#map-overlay")
    scale = image.width / float(overlay.get_attribute("viewBox").split()[2])
    badges = page.locator("#map-overlay g.badge")
    assert badges.locator("text").all_text_contents() == ["1", "2", "3"]
    for b in range(3):
        head = badges.nth(b).locator("circle:not(.halo)")
        x, y = float(head.get_attribute("cx")), float(head.get_attribute("cy"))
        assert near(image.getpixel((round(x * scale), round((y + 8) * scale))), SOURCE_COLOUR, 30)
    # hovering the cell from 1 to 3 lights points 1 and 3, and only them; clicking keeps them lit
    cell = rows.nth(0).locator("td.cell").nth(2)
    cell.hover()
    assert page.locator("#map-overlay g.badge.hl text").all_text_contents() == ["1", "3"]
    cell.click()
    rows.nth(1).locator("td.cell").nth(1).hover()
    assert page.locator("#map-overlay g.badge.sel text").all_text_contents() == ["1", "3"]
    assert page.locator("#map-overlay g.badge.hl text").all_text_contents() == ["2"]  # the diagonal: one point
    shoot(page, "console-matrix")
    # a click on the map adds the point under it: on point 2's pin tip, point 2 again
    overlay.scroll_into_view_if_needed()
    box, view_width = overlay.bounding_box(), float(overlay.get_attribute("viewBox").split()[2])
    head = badges.nth(1).locator("circle:not(.halo)")
    tip = float(head.get_attribute("cx")), float(head.get_attribute("cy")) + float(PIN_HEAD_PX)
    page.mouse.click(box["x"] + tip[0] * box["width"] / view_width, box["y"] + tip[1] * box["width"] / view_width)
    added = page.input_value("#p-sources").splitlines()
    assert len(added) == 4, added
    lat, lng = (float(v) for v in added[3].split(","))
    assert abs(lat - THREE[1][0]) < 5e-5 and abs(lng - THREE[1][1]) < 5e-5, added  # within a pixel (~3 m)


def test_optimisation_example_draws_a_coloured_route_per_used_vehicle_and_lists_the_steps(console):
    base, page, key, _ = console
    page.goto(f"{base}/portal/console?fn=optimization")
    page.click("#load-example")
    assert page.input_value("#p-jobs") == EXAMPLE["jobs"] and page.input_value("#p-vehicles") == EXAMPLE["vehicles"]
    page.fill("#key", key)
    page.click("button[type=submit]:has-text('Send')", no_wait_after=True)
    page.wait_for_selector("#result", timeout=120_000)
    assert page.inner_text("#result .status") == "200", page.inner_text("#result")[:2000]
    answer = json.loads(page.inner_text("#result > pre.json"))  # the API's answer as the console got it
    vehicles = [route["vehicle"] for route in answer["routes"]]
    assert len(vehicles) >= 2
    sections = page.locator("section.route")
    assert [int(s.get_attribute("data-vehicle")) for s in sections.all()] == vehicles
    colours = [s.get_attribute("data-colour") for s in sections.all()]
    assert colours == [VEHICLE_COLOURS[v - 1] for v in vehicles]  # a vehicle's colour: its line's
    for route, section in zip(answer["routes"], sections.all(), strict=True):
        rows = section.locator("tbody tr")
        assert rows.count() == len(route["steps"])
        assert rows.locator("td.arrival").all_text_contents() == [clock(s["arrival"]) for s in route["steps"]]
        jobs = [str(s["id"]) for s in route["steps"] if s["type"] == "job"]
        assert [t for t in rows.locator("td:nth-child(3)").all_text_contents() if t] == jobs
        stops = section.locator("tbody tr[data-type=job] svg.num text").all_text_contents()
        assert stops == [str(n) for n in range(1, len(jobs) + 1)]
    # the map: a line in each used vehicle's colour, none in the colours no vehicle has
    image = map_image(page)
    pixels = [image.getpixel((x, y)) for y in range(image.height) for x in range(image.width)]
    counts = {colour: sum(near(p, colour) for p in pixels) for colour in VEHICLE_COLOURS}
    for colour in colours:
        assert counts[colour] > 100, sorted(counts.items())
    assert all(counts[c] < 30 for c in VEHICLE_COLOURS[3:]), sorted(counts.items())  # the example has three vehicles
    # the unassigned job (too heavy for every van), with the API's reason
    unassigned = page.locator("#unassigned tbody tr")
    assert [int(r.get_attribute("data-job")) for r in unassigned.all()] == [u["id"] for u in answer["unassigned"]]
    assert 9 in [u["id"] for u in answer["unassigned"]]
    assert unassigned.locator("td.reason").all_text_contents()[0].startswith("capacity")
    # a step row lights its stop on the map
    sections.nth(0).locator("tbody tr[data-type=job]").first.hover()
    lit = page.locator("#map-overlay g.badge.hl")
    assert lit.count() == 1 and lit.locator("text").text_content() == "1"
    assert lit.locator("circle:not(.halo)").get_attribute("fill") == colours[0]
    page.mouse.move(0, 0)
    shoot(page, "console-optimisation")


def test_a_refused_profile_shows_the_apis_message(console):
    base, page, key, _ = console
    send(page, base, "optimization", key, **{**EXAMPLE, "profile": "car"})
    page.evaluate("document.querySelector('#p-profile').add(new Option('hovercraft', 'hovercraft'))")
    page.select_option("#p-profile", "hovercraft")
    page.fill("#key", key)
    page.click("button[type=submit]:has-text('Send')")
    assert page.inner_text("#result .status") == "400"
    message = page.inner_text("#api-error")
    assert message.startswith("vehicles[0].profile") and "car" in message, message
    assert page.locator("section.route").count() == 0 and page.locator("#answer-map").count() == 0


WALKS = {
    "routing": {"origin": "43.7312,7.4197", "destination": "43.7406,7.4270", "geometry": "geojson"},
    "isochrone": {"lat": "43.7384", "lng": "7.4246", "time": "5,10"},
}


@pytest.mark.parametrize(
    ("fn", "shot"), [("routing", "console-walking-route"), ("isochrone", "console-walking-isochrone")]
)
def test_walking_route_and_isochrone_drawn_in_the_console(console, fn, shot):
    base, page, key, _ = console
    send(page, base, fn, key, profile="foot", **WALKS[fn])
    assert page.inner_text("#result .status") == "200", page.inner_text("#result")[:2000]
    assert "profile=foot" in page.inner_text("#result p.mono")
    image = map_image(page)
    assert image.size == (640, 400)
    shoot(page, shot)


def test_the_views_fit_a_phone(console, browser):  # noqa: F811
    base, _, key, email = console
    page = signed_in(browser, base, email, PHONE)
    send(page, base, "matrix", key, sources="\n".join(f"{lat},{lng}" for lat, lng in THREE))
    assert page.locator("#matrix-table td.cell").count() == 9 and no_page_overflow(page)
    page.goto(f"{base}/portal/console?fn=optimization&example=monaco")
    page.fill("#key", key)
    page.click("button[type=submit]:has-text('Send')", no_wait_after=True)
    page.wait_for_selector("#result", timeout=120_000)
    assert page.locator("section.route").count() >= 2 and no_page_overflow(page)
    shoot(page, "console-optimisation")

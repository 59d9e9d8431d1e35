"""The console's map of an answer: the request's points, the answer's points, lines and polygon
rings; only the function's own parameters are sent."""

from __future__ import annotations

from app.portal.console import BY_SERVICE, FUNCTIONS, map_params, overlays, query_string, request_points

ROUTE = {
    "routes": [
        {
            "geometry": {"type": "LineString", "coordinates": [[7.41, 43.73], [7.42, 43.74], [7.43, 43.75]]},
            "legs": [{"steps": [{"location": {"lat": 43.73, "lng": 7.41}}, {"location": {"lat": 43.74, "lng": 7.42}}]}],
        }
    ]
}
ISOCHRONE = {
    "type": "FeatureCollection",
    "features": [
        {
            "type": "Feature",
            "geometry": {
                "type": "MultiPolygon",
                "coordinates": [
                    [[[7.0, 43.0], [7.1, 43.0], [7.1, 43.1], [7.0, 43.0]]],
                    [[[7.2, 43.2], [7.3, 43.2], [7.2, 43.3], [7.2, 43.2]]],
                ],
            },
            "properties": {"time": 5},
        }
    ],
}


def test_eleven_functions_with_their_paths():
    assert len(FUNCTIONS) == 11 and len({f.path for f in FUNCTIONS}) == 11


def test_route_map_has_the_line_and_the_request_points_only():
    given = request_points(
        BY_SERVICE["routing"], {"origin": "43.73,7.41", "destination": "43.75,7.43", "waypoints": ""}
    )
    assert given == [(43.73, 7.41), (43.75, 7.43)]
    params = map_params(ROUTE, given, answer_points=False)
    assert [(m.lat, m.lng, m.color, m.label) for m in params.markers] == [
        (43.73, 7.41, "red", "A"),
        (43.75, 7.43, "red", "B"),
    ]
    assert [p.points for p in params.paths] == [((43.73, 7.41), (43.74, 7.42), (43.75, 7.43))]


def test_isochrone_rings_become_paths_and_answer_points_markers():
    points, lines = overlays(ISOCHRONE)
    assert points == [] and len(lines) == 2 and lines[0][0] == (43.0, 7.0)
    params = map_params({"results": [{"lat": 43.5, "lng": 7.5}, {"lat": 91, "lng": 0}]}, [])
    assert [(m.lat, m.color) for m in params.markers] == [(43.5, "blue")]  # out-of-range point ignored
    assert map_params({"results": []}, []) is None


def test_query_string_keeps_only_the_functions_filled_parameters():
    allowed = [{"name": "query"}, {"name": "limit"}]
    assert query_string(allowed, {"query": " Helsinki ", "limit": "", "evil": "1"}) == "query=Helsinki"
    assert request_points(BY_SERVICE["isochrone"], {"lat": "x", "lng": "7"}) == []


def test_encoded_route_geometry_is_drawn():
    from engine import polyline

    encoded = polyline.encode([(43.73, 7.41), (43.74, 7.42)], 5)
    _, lines = overlays({"routes": [{"geometry": encoded}]})
    assert lines == [[(43.73, 7.41), (43.74, 7.42)]]

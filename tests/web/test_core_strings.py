"""Issue 20, item 5: address fields are strings on the core face (the spec types address.country,
city, street, number as strings): unknown is "" there, null on the gateway; the key is always there."""

from __future__ import annotations

from app.core_format import ADDRESS_STRINGS, from_core, to_core
from tests.web.test_functions import both_faces

# beside a street in Monaco: a street candidate, whose number (at least) is unknown
REVERSE = ("/v1/reverse-geocoding?lat=43.7311&lng=7.4195", "cmd=reverse_geocoding&lat=43.7311&lng=7.4195")


def test_unknown_address_fields_are_empty_strings_on_the_core_and_null_on_the_gateway(client, api_key):
    typed, core = both_faces(client, api_key, *REVERSE)
    gw_addr = typed["candidates"][0]["address"]
    core_addr = core["candidates"][0]["address"]
    unknown = {k for k, v in gw_addr.items() if v is None}
    assert "number" in unknown  # the case under test is there
    assert set(core_addr) == set(gw_addr)
    for k, v in core_addr.items():
        assert isinstance(v, str), (k, v)
        assert (v == "") == (k in unknown)
    assert from_core(core) == typed


def test_the_rule_touches_only_address_strings():
    typed = {
        "address": {"street": None, "number": "5", "city": None},
        "name": None,  # not an address field: null stays null
        "coord": {"lat": 43.7, "lng": 7.4},
    }
    core = to_core(typed)
    assert core == {
        "address": {"street": "", "number": "5", "city": ""},
        "name": None,
        "coord": {"x": "7.4", "y": "43.7"},
    }
    assert from_core(core) == typed
    assert {"country", "city", "street", "number"} <= ADDRESS_STRINGS

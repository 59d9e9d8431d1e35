"""POI taxonomy: stable lowercase ids mapped from OSM tags (contract.md, "Categories").

A POI gets the first category whose tag list matches; raw ``key=value`` tags are searchable too
(every POI keeps its main tags). ``resolve()`` turns a client's category parameter into a set of
``key=value`` strings to filter on.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import InvalidParameter


@dataclass(frozen=True)
class Category:
    id: str
    label: str
    tags: tuple[str, ...]  # "key=value"


CATEGORIES: tuple[Category, ...] = (
    Category("fuel", "Fuel station", ("amenity=fuel",)),
    Category("charging_station", "EV charging station", ("amenity=charging_station",)),
    Category("restaurant", "Restaurant", ("amenity=restaurant",)),
    Category("fast_food", "Fast food", ("amenity=fast_food",)),
    Category("cafe", "Café", ("amenity=cafe",)),
    Category("bar", "Bar or pub", ("amenity=bar", "amenity=pub", "amenity=biergarten")),
    Category("pharmacy", "Pharmacy", ("amenity=pharmacy", "healthcare=pharmacy")),
    Category("hospital", "Hospital", ("amenity=hospital", "healthcare=hospital")),
    Category("clinic", "Clinic or doctor", ("amenity=clinic", "amenity=doctors", "healthcare=clinic")),
    Category("dentist", "Dentist", ("amenity=dentist", "healthcare=dentist")),
    Category("atm", "ATM", ("amenity=atm",)),
    Category("bank", "Bank", ("amenity=bank",)),
    Category("post_office", "Post office", ("amenity=post_office",)),
    Category("parking", "Parking", ("amenity=parking", "amenity=parking_entrance")),
    Category("bicycle_parking", "Bicycle parking", ("amenity=bicycle_parking",)),
    Category(
        "hotel",
        "Hotel",
        ("tourism=hotel", "tourism=hostel", "tourism=guest_house", "tourism=motel", "tourism=apartment"),
    ),
    Category("supermarket", "Supermarket", ("shop=supermarket",)),
    Category("convenience", "Convenience store", ("shop=convenience", "shop=kiosk")),
    Category("bakery", "Bakery", ("shop=bakery", "shop=pastry")),
    Category("clothes", "Clothes shop", ("shop=clothes", "shop=shoes", "shop=boutique")),
    Category("shop", "Other shop", ("shop=*",)),
    Category("school", "School", ("amenity=school", "amenity=kindergarten")),
    Category("university", "University or college", ("amenity=university", "amenity=college")),
    Category("library", "Library", ("amenity=library",)),
    Category("police", "Police", ("amenity=police",)),
    Category("fire_station", "Fire station", ("amenity=fire_station",)),
    Category("place_of_worship", "Place of worship", ("amenity=place_of_worship",)),
    Category("toilets", "Toilets", ("amenity=toilets",)),
    Category("drinking_water", "Drinking water", ("amenity=drinking_water",)),
    Category("cinema", "Cinema", ("amenity=cinema",)),
    Category("theatre", "Theatre", ("amenity=theatre", "amenity=arts_centre")),
    Category("museum", "Museum", ("tourism=museum", "tourism=gallery")),
    Category("attraction", "Attraction", ("tourism=attraction", "tourism=viewpoint", "tourism=artwork", "historic=*")),
    Category("park", "Park", ("leisure=park", "leisure=garden")),
    Category(
        "sports",
        "Sports centre",
        ("leisure=sports_centre", "leisure=fitness_centre", "leisure=stadium", "leisure=swimming_pool"),
    ),
    Category("bus_stop", "Bus or tram stop", ("highway=bus_stop", "public_transport=platform", "railway=tram_stop")),
    Category("station", "Railway or metro station", ("railway=station", "railway=halt", "public_transport=station")),
    Category("taxi", "Taxi stand", ("amenity=taxi",)),
    Category("car_rental", "Car rental", ("amenity=car_rental", "amenity=car_sharing")),
    Category("embassy", "Embassy", ("office=diplomatic", "amenity=embassy")),
    Category("office", "Office", ("office=*",)),
    Category("marketplace", "Marketplace", ("amenity=marketplace",)),
    Category("marina", "Marina", ("leisure=marina",)),
    Category("information", "Tourist information", ("tourism=information",)),
)

BY_ID: dict[str, Category] = {c.id: c for c in CATEGORIES}
# keys whose values make something a POI
POI_KEYS = (
    "amenity",
    "shop",
    "tourism",
    "leisure",
    "healthcare",
    "office",
    "historic",
    "railway",
    "public_transport",
    "highway",
    "craft",
    "emergency",
    "sport",
    "man_made",
)
_EXACT: dict[str, str] = {}
_WILDCARD: dict[str, str] = {}
for _c in CATEGORIES:
    for _t in _c.tags:
        _k, _v = _t.split("=", 1)
        if _v == "*":
            _WILDCARD.setdefault(_k, _c.id)
        else:
            _EXACT.setdefault(_t, _c.id)


def categorize(tags) -> str | None:
    """Category id of a tagged object, None when it is not in the taxonomy."""
    for key in POI_KEYS:
        value = tags.get(key)
        if value:
            found = _EXACT.get(f"{key}={value}")
            if found:
                return found
    for key in POI_KEYS:
        if tags.get(key) and key in _WILDCARD:
            return _WILDCARD[key]
    return None


def poi_tags(tags) -> list[str]:
    """The key=value strings of a POI that raw-tag filters can match."""
    return [f"{k}={tags[k]}" for k in POI_KEYS if tags.get(k)]


def resolve(values, parameter: str | None = "category") -> tuple[set[str], set[str]]:
    """Client values -> (category ids, raw 'key=value' tags). Unknown ids -> InvalidParameter,
    whose message names ``parameter`` (``None``: a validator whose caller names the field)."""
    ids: set[str] = set()
    raw: set[str] = set()
    for value in values:
        value = value.strip()
        if not value:
            continue
        if "=" in value:
            k, v = value.split("=", 1)
            if not k.strip() or not v.strip():
                raise InvalidParameter(f"malformed OSM tag {value!r} (use key=value)", parameter=parameter)
            raw.add(f"{k.strip()}={v.strip()}")
        elif value.lower() in BY_ID:
            ids.add(value.lower())
        else:
            where = f" in {parameter}" if parameter else ""
            raise InvalidParameter(f"unknown category {value!r}{where}; see /v1/poi/categories", parameter=parameter)
    return ids, raw

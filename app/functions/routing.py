"""Directions by car, on foot or by bicycle (core ``cmd=routing``, ``GET /v1/routing``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import ValidationError, fields, post_load, validate

from app.gateway.base import GatewayBlueprint
from app.registry import Function, register
from app.schemas import fields as f
from app.schemas.common import LatLngSchema, ResponseSchema
from app.validation import ParamsSchema
from engine.limits import DEFAULT_LIMITS
from engine.services import routing

LIMITS = DEFAULT_LIMITS


class Alternatives(f.IntField):
    """``true``/``false`` or a count 0..Limits.routing_alternatives."""

    def _deserialize(self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any) -> int:
        text = str(value).strip().lower()
        if text in ("true", "yes"):
            return 1
        if text in ("false", "no"):
            return 0
        if text.isdigit() and int(text) <= LIMITS.routing_alternatives:
            return int(text)
        raise ValidationError(f"expected true, false or a count 0-{LIMITS.routing_alternatives}")


class RoutingArgs(ParamsSchema):
    origin = f.Point(required=True, metadata={"description": "Start `<lat>,<lng>`.", "example": "43.7312,7.4197"})
    destination = f.Point(required=True, metadata={"description": "End `<lat>,<lng>`.", "example": "43.7406,7.4270"})
    waypoints = f.PointList(
        max_points=LIMITS.routing_waypoints,
        metadata={
            "description": f"Stops in between, `lat,lng|lat,lng` (at most {LIMITS.routing_waypoints}) or `polyline:`.",
            "example": "43.7350,7.4210",
        },
    )
    alternatives = Alternatives(
        load_default=0,
        metadata={
            "description": f"Alternative routes: true/false or a count (0-{LIMITS.routing_alternatives}).",
            "example": "false",
            "type": "string",
        },
    )
    avoid = f.CommaList(choices=routing.AVOIDABLE, metadata={"example": "tolls"})
    steps = f.Flag(load_default=True, metadata={"description": "Turn-by-turn steps.", "example": True})
    geometry = fields.String(
        load_default="polyline",
        validate=validate.OneOf(routing.GEOMETRIES),
        metadata={
            "description": "Route geometry: encoded polyline (precision 5), polyline6, or a GeoJSON LineString.",
            "example": "polyline",
        },
    )

    profile = f.TravelProfile()

    @post_load
    def _build(self, data: dict[str, Any], **_kwargs: Any) -> routing.RoutingParams:
        data["avoid"] = frozenset(data.get("avoid") or ())
        data["waypoints"] = tuple(data.get("waypoints") or ())
        return routing.RoutingParams(**data)


class ManeuverSchema(ResponseSchema):
    type = fields.String(metadata={"example": "turn"})
    modifier = fields.String(allow_none=True, metadata={"example": "left"})
    exit = fields.Integer(allow_none=True, metadata={"description": "Roundabout exit number."})
    bearing_before = fields.Float(allow_none=True, metadata={"description": "Degrees from north before the maneuver."})
    bearing_after = fields.Float(allow_none=True, metadata={"description": "Degrees from north after the maneuver."})


class StepSchema(ResponseSchema):
    instruction = fields.String(metadata={"example": "Turn left onto Boulevard Albert 1er"})
    maneuver = fields.Nested(ManeuverSchema)
    name = fields.String(allow_none=True)
    distance = fields.Float(metadata={"example": 120.5})
    duration = fields.Float(metadata={"example": 14.2})
    location = fields.Nested(LatLngSchema)


class LegSchema(ResponseSchema):
    distance = fields.Float()
    duration = fields.Float()
    steps = fields.List(fields.Nested(StepSchema))


class RouteSchema(ResponseSchema):
    distance = fields.Float(required=True, metadata={"description": "Metres.", "example": 1830.4})
    duration = fields.Float(required=True, metadata={"description": "Seconds.", "example": 241.0})
    geometry = fields.Raw(required=True, metadata={"description": "Encoded polyline string or GeoJSON LineString."})
    legs = fields.List(fields.Nested(LegSchema))


class RoutingResult(ResponseSchema):
    routes = fields.List(fields.Nested(RouteSchema), required=True)
    waypoints = fields.List(fields.Dict())


FUNCTION = register(
    Function(
        service="routing",
        cmd="routing",
        core_schema=RoutingArgs,
        run=lambda rt, params: routing.run(rt.datasets, params),
    )
)

blp = GatewayBlueprint("Routing", __name__, url_prefix="/v1", description="Directions by car, on foot or by bicycle.")
blp.function_route(
    "/routing",
    FUNCTION,
    RoutingArgs,
    response_schema=RoutingResult,
    errors=(404,),
    summary="Directions by car, on foot or by bicycle",
    description="A route from `origin` to `destination` (through `waypoints`), with distance (m), duration (s), "
    "geometry and turn-by-turn steps; `alternatives`, `avoid`. `profile`: `car` (default), `foot` or `bicycle` "
    "(aliases `driving`, `walking`, `cycling`), each with its own ways, directions and speeds; a profile the "
    "region was not imported with is a 400 naming the region's profiles. Points are snapped to the nearest road "
    f"the profile may use (at most {LIMITS.snap_max_distance_m:g} m away, else 400 naming the parameter). "
    "404 when no route exists.",
)

"""Route optimisation (``POST /v1/optimization``, core ``cmd=optimization&problem=<JSON>``): a
problem in VROOM's format solved by VROOM over Meridian's own matrix (``engine.services.optimization``).

Solved by a worker on the ``optimization`` queue while the client waits, or as a job with
``async``; problems of at most ``Limits.optimization_inline_locations`` distinct locations are
solved in the web process (a few milliseconds). Quota: one unit per job (a shipment counts two) plus one per 100 cells of
the matrix, rounded up (:func:`optimization_cost`). Invalid problems are 400s naming the field as
``jobs[3].time_windows[0]``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from flask import request
from marshmallow import Schema, ValidationError, fields, post_load, validate, validates_schema

from app import jobs as app_jobs
from app.gateway.base import GatewayBlueprint
from app.registry import Function, register
from app.schemas import fields as f
from app.schemas.common import ResponseSchema
from app.validation import ParamsSchema
from engine.errors import InvalidParameter
from engine.limits import DEFAULT_LIMITS
from engine.services import optimization as opt
from engine.services.routing import GEOMETRIES

LIMITS = DEFAULT_LIMITS
CELLS_PER_UNIT = 100
_SECONDS = validate.Range(min=0, max=opt.MAX_SECONDS)


def _first_error(messages: Any, path: str = "") -> tuple[str, Any]:
    """The first error of a nested load, its field spelt ``jobs[3].time_windows[0]``."""
    if isinstance(messages, Mapping):
        key, value = next(iter(messages.items()))
        if isinstance(key, int):
            return _first_error(value, f"{path}[{key}]")
        return _first_error(value, path if key == "_schema" else (f"{path}.{key}" if path else str(key)))
    if isinstance(messages, list | tuple) and messages and not isinstance(messages[0], str):
        return _first_error(messages[0], path)
    return path, messages


class LngLat(f.PairField):
    """``[lng, lat]`` as VROOM writes it -> ``(lat, lng)`` as the engine takes it."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("metadata", {}).setdefault("description", "`[lng, lat]`, decimal degrees.")
        super().__init__(**kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> tuple[float, float]:
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        ):
            raise ValidationError("expected [lng, lat]")
        return (f.check_lat(float(value[1])), f.check_lng(float(value[0])))


def _window(**kwargs: Any) -> fields.List[Any]:
    return fields.List(
        fields.Integer(validate=_SECONDS),
        validate=validate.Length(equal=2),
        metadata={"description": "`[start, end]`, seconds."},
        **kwargs,
    )


def _amount(description: str) -> fields.List[Any]:
    return fields.List(
        fields.Integer(validate=validate.Range(min=0)),
        validate=validate.Length(max=16),
        metadata={"description": description},
    )


def _skills() -> fields.List[Any]:
    return fields.List(fields.Integer(validate=validate.Range(min=0)), metadata={"description": "Skill numbers."})


class JobSchema(Schema):
    id = fields.Integer(required=True, validate=validate.Range(0, opt.MAX_ID))
    location = LngLat(required=True)
    service = fields.Integer(load_default=0, validate=_SECONDS, metadata={"description": "Seconds on site."})
    delivery = _amount("Amounts delivered (one per capacity dimension).")
    pickup = _amount("Amounts picked up.")
    skills = _skills()
    priority = fields.Integer(load_default=0, validate=validate.Range(0, 100))
    time_windows = fields.List(_window(), metadata={"description": "When service may begin; default: any time."})

    @post_load
    def _job(self, data: dict[str, Any], **_kwargs: Any) -> opt.Job:
        return opt.Job(
            id=data["id"],
            location=data["location"],
            service=data["service"],
            delivery=tuple(data.get("delivery") or ()),
            pickup=tuple(data.get("pickup") or ()),
            skills=tuple(data.get("skills") or ()),
            priority=data["priority"],
            time_windows=tuple(tuple(w) for w in data.get("time_windows") or ()),
        )


class VehicleSchema(Schema):
    id = fields.Integer(required=True, validate=validate.Range(0, opt.MAX_ID))
    start = LngLat()
    end = LngLat()
    capacity = _amount("What the vehicle carries, per dimension.")
    skills = _skills()
    time_window = _window()
    profile = f.TravelProfile(
        metadata={
            "description": "How the vehicle travels: car, foot or bicycle (aliases driving, walking, cycling), timed "
            "by that profile's matrix, its route drawn on that profile's ways. The region must have been imported "
            "with it (`meridian import --profiles`)."
        }
    )

    @post_load
    def _vehicle(self, data: dict[str, Any], **_kwargs: Any) -> opt.Vehicle:
        window = data.get("time_window")
        return opt.Vehicle(
            id=data["id"],
            start=data.get("start"),
            end=data.get("end"),
            capacity=tuple(data.get("capacity") or ()),
            skills=tuple(data.get("skills") or ()),
            time_window=None if window is None else (window[0], window[1]),
            profile=data["profile"],
        )


class ShipmentStepSchema(Schema):
    id = fields.Integer(required=True, validate=validate.Range(0, opt.MAX_ID))
    location = LngLat(required=True)
    service = fields.Integer(load_default=0, validate=_SECONDS, metadata={"description": "Seconds on site."})
    time_windows = fields.List(_window(), metadata={"description": "When service may begin; default: any time."})

    @post_load
    def _step(self, data: dict[str, Any], **_kwargs: Any) -> opt.ShipmentStep:
        windows = tuple(tuple(w) for w in data.get("time_windows") or ())
        return opt.ShipmentStep(id=data["id"], location=data["location"], service=data["service"], time_windows=windows)


class ShipmentSchema(Schema):
    pickup = fields.Nested(ShipmentStepSchema, required=True)
    delivery = fields.Nested(ShipmentStepSchema, required=True)
    amount = _amount("Amounts carried from the pickup to the delivery.")
    skills = _skills()
    priority = fields.Integer(load_default=0, validate=validate.Range(0, 100))

    @post_load
    def _shipment(self, data: dict[str, Any], **_kwargs: Any) -> opt.Shipment:
        return opt.Shipment(
            pickup=data["pickup"],
            delivery=data["delivery"],
            amount=tuple(data.get("amount") or ()),
            skills=tuple(data.get("skills") or ()),
            priority=data["priority"],
        )


class OptimizationBody(ParamsSchema):
    """The JSON body of ``POST /v1/optimization``: a problem in VROOM's format."""

    jobs = fields.List(
        fields.Nested(JobSchema),
        load_default=list,
        validate=validate.Length(0, LIMITS.optimization_jobs),
        metadata={"description": f"Up to {LIMITS.optimization_jobs} jobs (with the shipments' steps)."},
    )
    vehicles = fields.List(
        fields.Nested(VehicleSchema),
        required=True,
        validate=validate.Length(1, LIMITS.optimization_vehicles),
        metadata={"description": f"1-{LIMITS.optimization_vehicles} vehicles."},
    )
    shipments = fields.List(
        fields.Nested(ShipmentSchema),
        load_default=list,
        validate=validate.Length(0, LIMITS.optimization_jobs // 2),
        metadata={"description": "Pickup and delivery pairs, by the same vehicle; each counts two jobs."},
    )
    geometry = fields.String(
        load_default="polyline",
        validate=validate.OneOf(GEOMETRIES),
        metadata={"description": "Each route's line: " + ", ".join(GEOMETRIES) + "."},
    )
    async_ = fields.Boolean(data_key="async", load_default=False, metadata={"description": app_jobs.ASYNC_DESCRIPTION})

    def load(self, data: Any, **kwargs: Any) -> Any:
        try:
            return super().load(data, **kwargs)
        except ValidationError as error:
            name, message = _first_error(error.messages)
            raise ValidationError({name: message if isinstance(message, list) else [message]}) from None

    @validates_schema
    def _problem(self, data: dict[str, Any], **_kwargs: Any) -> None:
        """What only the whole problem tells (windows, dimensions): 400 naming the field."""
        try:
            problem = opt.OptimizationParams(
                tuple(data["jobs"]), tuple(data["vehicles"]), shipments=tuple(data["shipments"])
            )
            opt.check(problem, LIMITS)
        except InvalidParameter as exc:
            raise ValidationError(str(exc), field_name=exc.parameter or "_schema") from None

    @post_load
    def _build(self, data: dict[str, Any], **_kwargs: Any) -> opt.OptimizationParams:
        return opt.OptimizationParams(
            jobs=tuple(data["jobs"]),
            vehicles=tuple(data["vehicles"]),
            geometry=data["geometry"],
            shipments=tuple(data["shipments"]),
        )


class OptimizationCore(ParamsSchema):
    """The core's ``cmd=optimization``: the problem as JSON in one query parameter."""

    problem = fields.String(required=True, metadata={"description": "The problem in VROOM's format, as JSON."})

    @post_load
    def _build(self, data: dict[str, Any], **_kwargs: Any) -> opt.OptimizationParams:
        try:
            body = json.loads(data["problem"])
        except ValueError:
            raise ValidationError("expected a JSON object", field_name="problem") from None
        if not isinstance(body, dict) or "async" in body:
            raise ValidationError("expected a JSON object (without async)", field_name="problem")
        params: opt.OptimizationParams = OptimizationBody().load(body)
        return params


class OptimizationStepSchema(ResponseSchema):
    type = fields.String(required=True, metadata={"description": "start, job or end."})
    id = fields.Integer(metadata={"description": "The job's id (job steps)."})
    location = fields.List(fields.Float(), required=True, metadata={"description": "`[lng, lat]`."})
    arrival = fields.Integer(required=True, metadata={"description": "Seconds, on the problem's clock."})
    duration = fields.Integer(required=True, metadata={"description": "Travel seconds since the start."})
    service = fields.Integer(required=True)
    waiting_time = fields.Integer(required=True)
    load_ = fields.List(
        fields.Integer(), data_key="load", required=True, metadata={"description": "On board after the step."}
    )


class OptimizationTotalsSchema(ResponseSchema):
    """What a route and the whole solution both sum."""

    cost = fields.Integer(required=True, metadata={"description": "VROOM's cost: travel seconds."})
    service = fields.Integer(required=True)
    duration = fields.Integer(required=True, metadata={"description": "Travel seconds."})
    waiting_time = fields.Integer(required=True)
    distance = fields.Float(required=True, metadata={"description": "Metres, by Meridian's matrix."})
    delivery = fields.List(fields.Integer(), required=True)
    pickup = fields.List(fields.Integer(), required=True)


class OptimizationRouteSchema(OptimizationTotalsSchema):
    vehicle = fields.Integer(required=True)
    steps = fields.List(fields.Nested(OptimizationStepSchema), required=True)
    geometry = fields.Raw(required=True, metadata={"description": "Encoded polyline or GeoJSON LineString."})


class OptimizationUnassignedSchema(ResponseSchema):
    id = fields.Integer(required=True)
    type = fields.String(required=True)
    location = fields.List(fields.Float(), required=True)
    reason = fields.String(metadata={"description": "When the vehicles tell it: skills or capacity."})


class OptimizationSummarySchema(OptimizationTotalsSchema):
    routes = fields.Integer(required=True)
    unassigned = fields.Integer(required=True)


class OptimizationResult(ResponseSchema):
    code = fields.Integer(required=True, metadata={"description": "0: solved (VROOM's code)."})
    summary = fields.Nested(OptimizationSummarySchema, required=True)
    unassigned = fields.List(fields.Nested(OptimizationUnassignedSchema), required=True)
    routes = fields.List(fields.Nested(OptimizationRouteSchema), required=True)


# one route: its totals are the solution's
_EXAMPLE_TOTALS = {
    "cost": 530,
    "service": 300,
    "duration": 530,
    "waiting_time": 0,
    "distance": 3120.4,
    "delivery": [2],
    "pickup": [0],
}
EXAMPLE = {
    "code": 0,
    "summary": {**_EXAMPLE_TOTALS, "routes": 1, "unassigned": 0},
    "unassigned": [],
    "routes": [
        {
            **_EXAMPLE_TOTALS,
            "vehicle": 1,
            "steps": [
                {
                    "type": "start",
                    "location": [7.4246, 43.7384],
                    "arrival": 0,
                    "duration": 0,
                    "service": 0,
                    "waiting_time": 0,
                    "load": [2],
                },
                {
                    "type": "job",
                    "id": 17,
                    "location": [7.4271, 43.7402],
                    "arrival": 260,
                    "duration": 260,
                    "service": 300,
                    "waiting_time": 0,
                    "load": [0],
                },
                {
                    "type": "end",
                    "location": [7.4246, 43.7384],
                    "arrival": 830,
                    "duration": 530,
                    "service": 0,
                    "waiting_time": 0,
                    "load": [0],
                },
            ],
            "geometry": "mfmjGyr`l@...",
        }
    ],
}


def _distinct(points: list[Any]) -> int:
    return len({json.dumps(p) for p in points if p is not None})


def optimization_cost() -> int:
    """Quota units of the request: one per job (a shipment counts two) plus one per 100 matrix cells (distinct
    locations squared), rounded up; 1 for a request refused with 400."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return 1
    job_list, vehicles, shipments = body.get("jobs", []), body.get("vehicles"), body.get("shipments", [])
    if not (isinstance(job_list, list) and isinstance(vehicles, list) and isinstance(shipments, list)):
        return 1
    tasks = len(job_list) + 2 * len(shipments)
    if not 0 < tasks <= LIMITS.optimization_jobs or not 0 < len(vehicles) <= LIMITS.optimization_vehicles:
        return 1
    points = [j.get("location") for j in job_list if isinstance(j, dict)]
    points += [v.get(k) for v in vehicles if isinstance(v, dict) for k in ("start", "end")]
    steps = [sh.get(k) for sh in shipments if isinstance(sh, dict) for k in ("pickup", "delivery")]
    points += [step.get("location") for step in steps if isinstance(step, dict)]
    return tasks + math.ceil(_distinct(points) ** 2 / CELLS_PER_UNIT)


FUNCTION = register(
    Function(
        service="optimization",
        cmd="optimization",
        core_schema=OptimizationCore,
        run=lambda rt, params: opt.run(rt.datasets, params),
        queue="optimization",
        service_ref="engine.services.optimization:run",
        inline=lambda params: params.locations <= LIMITS.optimization_inline_locations,
    )
)

DESCRIPTION = (
    "Solves a vehicle routing problem in [VROOM's format](https://github.com/VROOM-Project/vroom/blob/master/docs/API.md) "
    "(jobs with `location` `[lng, lat]`, `service`, `delivery`/`pickup`, `skills`, `priority`, `time_windows`; "
    "vehicles with `start`/`end`, `capacity`, `skills`, `time_window`, `profile`) with VROOM over "
    "Meridian's own travel-time matrix, and answers VROOM's solution (each vehicle's ordered steps with "
    "arrival, service and waiting times, the loads, the unassigned jobs with a reason when the vehicles "
    "tell it) with each route's line from Meridian's router. "
    "A vehicle's `profile` (`car`, the default, `foot` or `bicycle`; aliases `driving`, `walking`, `cycling`) "
    "is how it travels: one matrix per profile of the fleet, each vehicle timed by its own and its route "
    "drawn on its profile's ways (a mixed fleet: a bicycle courier beside vans). "
    f"Up to {LIMITS.optimization_jobs} jobs and {LIMITS.optimization_vehicles} vehicles; problems of up to "
    f"{LIMITS.optimization_inline_locations} distinct locations are answered at once, larger ones solved by a "
    "worker while the request waits (or, with `async`, as a job). Invalid problems are 400s naming the field "
    "(`jobs[3].time_windows[0]`: a window that ends before it starts; `vehicles[1].capacity`: dimensions that "
    "do not match; `jobs[5].location`: a point off every imported road). Quota: one unit per job plus one "
    f"per {CELLS_PER_UNIT} cells of the matrix (distinct locations squared), rounded up. Shipments "
    "(`pickup` and `delivery` steps with `id`, `location`, `service`, `time_windows`; an `amount`, `skills`) "
    "are served by one vehicle, pickup first, and count two jobs. Not served yet: breaks."
)

blp = GatewayBlueprint("Optimization", __name__, url_prefix="/v1", description="Route optimisation for fleets (VROOM).")
blp.function_route(
    "/optimization",
    FUNCTION,
    OptimizationBody,
    response_schema=OptimizationResult,
    example=EXAMPLE,
    errors=(404,),
    location="json",
    method="post",
    summary="Route optimisation (VROOM problem in the body)",
    description=DESCRIPTION,
    cost=optimization_cost,
)

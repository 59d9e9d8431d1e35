"""Static map images (core ``cmd=staticmap``, ``GET /v1/staticmaps``), rendered by Celery workers
(queue ``staticmap``) and cached in Redis."""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, fields, post_load, validate, validates_schema

from app import jobs
from app.gateway.base import GatewayBlueprint
from app.registry import Function, register
from app.schemas import fields as f
from app.validation import ParamsSchema
from engine.limits import DEFAULT_LIMITS
from engine.render.overlays import parse_markers, parse_path
from engine.services import staticmap

LIMITS = DEFAULT_LIMITS


def parse_size(text: str) -> tuple[int, int]:
    w, sep, h = text.lower().partition("x")
    if not sep or not w.isdigit() or not h.isdigit():
        raise ValidationError(f'expected "<width>x<height>" in pixels, got {text!r}')
    width, height = int(w), int(h)
    top = LIMITS.staticmap_max_size
    if not (1 <= width <= top and 1 <= height <= top):
        raise ValidationError(f"width and height must be between 1 and {top}, got {width}x{height}")
    return width, height


class StaticMapArgs(ParamsSchema):
    center = f.Point(metadata={"description": "Map centre `<lat>,<lng>` (with `zoom`).", "example": "43.7384,7.4246"})
    zoom = fields.Integer(
        validate=validate.Range(0, 20),
        metadata={"description": "Slippy-map zoom level 0-20 (256-px tiles).", "example": 15},
    )
    bbox = f.BBox(metadata={"description": "Show this area `<minlng>,<minlat>,<maxlng>,<maxlat>` (instead of center)."})
    size = fields.String(
        load_default="600x400",
        metadata={
            "description": f"`<width>x<height>` in CSS pixels, each at most {LIMITS.staticmap_max_size}.",
            "example": "600x400",
        },
    )
    scale = fields.Integer(
        load_default=1,
        validate=validate.OneOf([1, 2]),
        metadata={"description": "2 for high-density screens (the image is twice as large).", "example": 1},
    )
    format = fields.String(
        load_default="png",
        validate=validate.OneOf(["png", "jpg", "jpeg"]),
        metadata={"description": "Image format.", "example": "png"},
    )
    markers = fields.List(
        f.Parsed(parse_markers),
        metadata={
            "description": "Markers: `color:red|label:A|<lat>,<lng>|<lat>,<lng>`; repeat the parameter for other styles.",
            "example": ["color:red|label:A|43.7384,7.4246"],
        },
    )
    path = fields.List(
        f.Parsed(parse_path),
        metadata={
            "description": "A path: `color:0x0000ff|weight:5|<lat>,<lng>|<lat>,<lng>` or `enc:<encoded polyline>`; "
            "repeat for several paths.",
            "example": ["color:blue|weight:4|43.7384,7.4246|43.7402,7.4271"],
        },
    )
    async_ = jobs.async_field()

    @validates_schema
    def _window(self, data: dict[str, Any], **_kwargs: Any) -> None:
        if data.get("center") is not None and data.get("bbox") is not None:
            raise ValidationError("give either center (+zoom) or bbox, not both", field_name="bbox")
        if (
            data.get("center") is not None
            and data.get("zoom") is None
            and not (data.get("markers") or data.get("path"))
        ):
            raise ValidationError("center needs a zoom level", field_name="zoom")
        if data.get("center") is None and data.get("bbox") is None and not (data.get("markers") or data.get("path")):
            raise ValidationError("give center+zoom, bbox, or markers/path to fit the map to", field_name="center")

    @post_load
    def _build(self, data: dict[str, Any], **_kwargs: Any) -> staticmap.StaticMapParams:
        data.pop("async_", None)  # the gateway reads it first (app.jobs.gateway_schema)
        try:
            width, height = parse_size(data.pop("size"))
        except ValidationError as exc:
            raise ValidationError(exc.messages[0], field_name="size") from None
        markers = tuple(m for group in data.pop("markers", None) or () for m in group)
        if len(markers) > LIMITS.staticmap_markers:
            raise ValidationError(f"at most {LIMITS.staticmap_markers} markers", field_name="markers")
        paths = tuple(data.pop("path", None) or ())
        if sum(len(p.points) for p in paths) > LIMITS.staticmap_path_points:
            raise ValidationError(f"at most {LIMITS.staticmap_path_points} path points", field_name="path")
        fmt = "jpg" if data.pop("format") in ("jpg", "jpeg") else "png"
        params = staticmap.StaticMapParams(width=width, height=height, markers=markers, paths=paths, format=fmt, **data)
        staticmap.validate(params)
        return params


FUNCTION = register(
    Function(
        service="staticmap",
        cmd="staticmap",
        core_schema=StaticMapArgs,
        queue="staticmap",
        service_ref="engine.services.staticmap:run",
    )
)

blp = GatewayBlueprint(
    "Static maps",
    __name__,
    url_prefix="/v1",
    description="Map images drawn from the dataset's layers (Web Mercator, PNG or JPEG).",
)

IMAGE = {"schema": {"type": "string", "format": "binary"}}


DOC: dict[str, Any] = dict(
    summary="Render a static map image",
    description="A cartographic map (water, land use, buildings, roads by class, labels, borders) with optional "
    "markers and paths. Window: `center`+`zoom`, `bbox`, or fitted to the markers/paths. Rendered by a worker "
    "and cached; identical requests are answered from the cache. © OpenStreetMap contributors is drawn in a "
    "corner. Outside the data: a neutral background. With `async=true`: 202 and a job id; the image is then "
    "served at `/v1/jobs/{id}/result`.",
    responses={"200": {"description": "The image.", "content": {"image/png": IMAGE, "image/jpeg": IMAGE}}},
)


blp.function_route("/staticmaps", FUNCTION, StaticMapArgs, **DOC)

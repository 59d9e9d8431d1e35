"""The served OpenAPI document: complete, fuzzed with schemathesis against a live gateway, and
good enough to generate a working client."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import requests

from config.settings import PROJECT_ROOT

ARTIFACTS = PROJECT_ROOT / "tests" / "artifacts"


def test_spec_is_openapi_3_with_security_and_docs(client):
    spec = client.get("/api-json").get_json()
    assert spec["openapi"].startswith("3.0")
    assert spec["components"]["securitySchemes"]["ApiKeyAuth"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
    }
    assert spec["servers"] and spec["info"]["version"]
    assert "ErrorBody" in spec["components"]["schemas"]
    ops = [
        (path, method, op)
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    ]
    assert any(path == "/v1/geocoding" for path, _, _ in ops)
    for path, method, op in ops:
        assert op.get("summary") and op.get("description"), (path, method)
        assert op.get("tags"), (path, method)
        if path.startswith("/v1/") and "/health" not in path:
            for status in ("200", "400", "401", "403", "429", "500", "503"):
                assert status in op["responses"], (path, method, status)
            error = op["responses"]["400"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorBody"}
            for param in op.get("parameters", []):
                assert param.get("description"), (path, param["name"])
                assert "example" in param or "example" in param.get("schema", {}), (path, param["name"])


def test_function_views_answers_documented_without_a_wrapper(client):
    """function_route's views document their answers through GatewayDocsPlugin: the body schema
    and example of 200, the extra errors, 202 for queued functions; the schemas as references."""
    spec = client.get("/api-json").get_json()
    routing = spec["paths"]["/v1/routing"]["get"]
    assert routing["summary"] == "Directions by car, on foot or by bicycle"
    assert routing["description"].startswith("A route from `origin`")
    assert routing["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RoutingResult"
    }
    assert routing["responses"]["404"]["description"] == "No results found."
    assert "202" not in routing["responses"]
    isochrone = spec["paths"]["/v1/isochrone"]["get"]["responses"]
    assert isochrone["202"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/JobAccepted"}
    geocoding_ok = spec["paths"]["/v1/geocoding"]["get"]["responses"]["200"]["content"]["application/json"]
    assert geocoding_ok["example"], "the example given to function_route"


@pytest.mark.integration
@pytest.mark.slow
def test_schemathesis_no_5xx_and_schema_conformance(live_server, api_key, celery_worker, tmp_path):
    """Property-based run of every documented operation against the live gateway (real Redis)."""
    cmd = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "run",
        f"{live_server}/api-json",
        "--url",
        live_server,
        "-H",
        f"X-API-Key: {api_key}",
        "--checks",
        "not_a_server_error,status_code_conformance,content_type_conformance,"
        "response_schema_conformance,negative_data_rejection",
        "--max-examples",
        "25",
        "--seed",
        "1",
        "--workers",
        "1",
        "--request-timeout",
        "60",
        "--suppress-health-check",
        "all",
        "--no-color",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "schemathesis.txt").write_text(proc.stdout + proc.stderr)
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
    print(tail)
    assert proc.returncode == 0, tail


@pytest.mark.integration
@pytest.mark.slow
def test_generated_client_calls_geocoding(live_server, api_key, tmp_path):
    spec = requests.get(f"{live_server}/api-json", timeout=10).json()
    spec_path = tmp_path / "openapi.json"
    spec_path.write_text(json.dumps(spec))
    out = tmp_path / "client"
    gen = subprocess.run(
        [
            sys.executable,
            "-m",
            "openapi_python_client",
            "generate",
            "--path",
            str(spec_path),
            "--output-path",
            str(out),
            "--meta",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert gen.returncode == 0, gen.stdout + gen.stderr
    script = f"""
import sys
sys.path.insert(0, {str(out.parent)!r})
from client import AuthenticatedClient
from client.api.geocoding import get_v1_geocoding
c = AuthenticatedClient(base_url={live_server!r}, token={api_key!r}, prefix="", auth_header_name="X-API-Key")
r = get_v1_geocoding.sync_detailed(client=c, query="Aleksanterinkatu 52")
print(r.status_code)
print(r.parsed.candidates[0].coord.lat, r.parsed.candidates[0].coord.lng)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    status, coords = run.stdout.strip().splitlines()[-2:]
    assert status.endswith("200")
    lat, lng = map(float, coords.split())
    assert 60.16 < lat < 60.18 and 24.93 < lng < 24.96


def test_openapi_cli_writes_standalone_page(tmp_path, settings):
    from tests.fixtures_live import settings_env

    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "openapi", "--out", str(tmp_path)],
        cwd=PROJECT_ROOT,
        env=settings_env(settings),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    spec = json.loads((tmp_path / "openapi.json").read_text())
    assert "/v1/geocoding" in spec["paths"]
    page = (tmp_path / "index.html").read_text()
    assert "SwaggerUIBundle" in page and '"/v1/geocoding"' in page
    assert not re.search(r'(src|href)="(https?:)?//', page)  # everything inlined: no CDN, opens offline

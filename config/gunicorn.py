"""gunicorn settings for ``meridian serve`` (values from the environment via config.settings)."""

from typing import Any

from config.settings import Settings

_settings = Settings.from_env()

# loopback unless BIND_HOST says otherwise: clients reach Meridian through a buffering proxy
# (docs/deployment.md); containers set BIND_HOST=0.0.0.0 for the proxy in front of them
_host = _settings.bind_host
bind = f"[{_host}]:{_settings.port}" if ":" in _host else f"{_host}:{_settings.port}"
workers = _settings.web_workers
# gunicorn's threaded worker (a pool of threads per process, kept-alive connections waiting in
# the worker's poller between requests) whose threads serve a connection's next request when it
# comes at once, and which hands a connection to a thread only once its request has arrived
# (config/gunicorn_worker.py, config/request_gate.py): a client sending slowly waits in a
# selector, not in a thread, and is answered 408 past HEADER_READ_TIMEOUT / BODY_READ_TIMEOUT.
worker_class = "config.gunicorn_worker.LingeringThreadWorker"
threads = 4
# Long point lists (1000 points ~ 22 KB) must fit in a URL: gunicorn's own limit is lifted (0)
# and the app enforces Limits.request_line_bytes with a 414 in the spec's error body.
limit_request_line = 0
limit_request_field_size = 16_384
timeout = 60
graceful_timeout = 20
keepalive = 5
accesslog = None  # the app writes one structured line per request
# gunicorn >= 24 opens a control socket at one fixed path per user: several servers on one host
# (tests, a core and a gateway side by side) would fight over it. Meridian does not use it.
control_socket_disable = True


def post_worker_init(worker: Any) -> None:
    """Warm the web worker in the background as soon as it starts: every dataset opened and every
    numba kernel loaded from the image's cache, or compiled (engine/warmup.py);
    ``/v1/health/ready`` answers 503 (check ``warm``) until every web worker of this server is
    warm (a request may reach any of them). Then move everything loaded so far out of the
    garbage collector's sight (``gc.freeze``). Without it every full collection walks the
    hundreds of thousands of objects of Flask, marshmallow, numba and the indexes, which added
    60 us to the mean in-process request time (routing, Helsinki)."""
    import gc
    import os
    import tempfile
    from pathlib import Path

    from engine.warmup import PeerWarmth, warm_in_background

    rt = worker.wsgi.extensions["meridian"]
    peers = PeerWarmth(Path(tempfile.gettempdir()) / f"meridian-warm-{worker.ppid}", worker.cfg.workers)
    rt.warm.peers = peers

    def freeze() -> None:
        gc.collect()
        gc.freeze()

    def warmed() -> None:
        if rt.warm.phase == "warm":
            peers.mark(os.getpid())
        freeze()

    freeze()
    warm_in_background(rt.datasets, rt.warm, then=warmed)

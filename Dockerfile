# Meridian: one image for every role (web, Celery workers, Flower, import and publish jobs).
#   docker build -t meridian .
#   docker run meridian serve | worker --queues ... | import PBF | dataset publish REGION --to STORE
# Stage 1 builds the virtualenv (compilers only here); stage 2 is the slim runtime, non-root.

FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# compilers for the few packages without a wheel for this platform
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential=12.9 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY accounts ./accounts
COPY app ./app
COPY cli ./cli
COPY config ./config
COPY engine ./engine
COPY tasks ./tasks
COPY workers ./workers
RUN python -m venv /opt/meridian \
    && /opt/meridian/bin/pip install --upgrade pip==25.3 \
    && /opt/meridian/bin/pip install .

FROM python:3.11-slim-bookworm AS runtime
# a fixed, unprivileged user: gunicorn and the Celery workers never run as root; the directories
# exist in the image so that named volumes mounted on them start owned by that user
RUN groupadd --system --gid 10001 meridian \
    && useradd --system --uid 10001 --gid meridian --home-dir /var/lib/meridian --create-home meridian \
    && mkdir -p /var/lib/meridian/data /var/lib/meridian/import /srv/datasets \
    && chown -R meridian:meridian /var/lib/meridian /srv/datasets
COPY --from=build /opt/meridian /opt/meridian
ENV PATH=/opt/meridian/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    NODE_ENV=production \
    LOG_FORMAT=json \
    PORT=3000 \
    BIND_HOST=0.0.0.0 \
    DATA_DIR=/var/lib/meridian/data \
    MPLCONFIGDIR=/tmp/matplotlib \
    NUMBA_CACHE_DIR=/opt/meridian/numba-cache \
    NUMBA_CPU_NAME=generic
# BIND_HOST=0.0.0.0: in a container gunicorn must listen on the container's interface for the
# proxy in front (compose's HAProxy, a Kubernetes ingress); publish the port to nothing else.
# numba's compiled kernels are part of the image: `meridian warmup` imports a tiny synthetic town
# and runs each service on it, writing every kernel to NUMBA_CACHE_DIR (owned by the runtime user,
# so a node whose CPU differs from the build machine's compiles and caches its own there, before
# it says ready). A process starts in seconds instead of compiling for ~30 s. NUMBA_CPU_NAME=generic
# (build and run time alike) makes the kernels, and so the cache, fit every CPU of the
# architecture, not only the build machine's model; docs/deployment.md, "Cold start".
RUN mkdir -p /opt/meridian/numba-cache && chown meridian:meridian /opt/meridian/numba-cache
USER 10001:10001
RUN meridian warmup
WORKDIR /var/lib/meridian
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:3000/v1/health/live', timeout=4)"]
ENTRYPOINT ["meridian"]
CMD ["serve"]

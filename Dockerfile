# One image for every process of the service; docker-compose.yml picks the entry point:
#   node <flags> dist/gateway/server.js   HTTP gateway (default CMD, port 8080; flags: src/gateway/node-flags.ts)
#   node dist/workers/runner.js       Kafka consumer groups named in WORKERS (empty: all kinds)
#   node dist/shared/db/migrate-cli.js  create the database if missing, apply ./migrations, exit
# Node 22 LTS, pinned to the exact release `npm test` runs the suite on (scripts/test reads
# NODE_VERSION from here). Pinned by version, not digest: digests are resolved where images are
# pulled (a registry or engine), which our build machines do not reach.
# Needs BuildKit (the legacy builder refuses RUN --mount): Docker 23+ with the buildx plugin,
# Docker 20.10 with DOCKER_BUILDKIT=1. No `# syntax=` line on purpose: it would fetch a frontend
# image from Docker Hub; the engine's built-in frontend reads this file.
# A TLS-intercepting proxy on the way to the npm registry: hand its CA to `npm ci` as a build
# secret, e.g. `docker build --secret id=extra_ca,src=/etc/ssl/certs/ca-certificates.crt .`
# (a PEM bundle; it is added to Node's CAs, never stored in an image layer); scripts/image-build
# finds the host's and does that.
# Stopping: the process exits within SHUTDOWN_TIMEOUT_MS (15 s) of SIGTERM; Docker's default grace
# is 10 s, so run with `--stop-timeout 20` (compose: stop_grace_period; Kubernetes:
# terminationGracePeriodSeconds). test/image/grace-periods.test.ts checks the values agree.
ARG NODE_VERSION=22.23.3
ARG NODE_IMAGE=node:${NODE_VERSION}-bookworm-slim

# ---- build: all dependencies, compile TypeScript into dist/ ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the only packages with install scripts (esbuild, protobufjs: dev/test tools;
# core-js, under redoc: a donation notice) are denied by package.json's "allowScripts" anyway, and
# tsc needs none of them. (npm 10 in this image does not read "allowScripts" itself.)
RUN --mount=type=cache,target=/root/.npm --mount=type=secret,id=extra_ca \
    if [ -s /run/secrets/extra_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/extra_ca; fi && \
    npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build

# ---- runtime: production dependencies, compiled code, migrations ----
FROM ${NODE_IMAGE} AS runtime
# The service's version (package.json's; scripts/image-build passes it), as the OCI label.
ARG SERVICE_VERSION=unset
LABEL org.opencontainers.image.version=${SERVICE_VERSION}
ENV NODE_ENV=production
# Stack traces name the TypeScript sources (dist/ carries the source maps tsc writes).
ENV NODE_OPTIONS=--enable-source-maps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm --mount=type=secret,id=extra_ca \
    if [ -s /run/secrets/extra_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/extra_ca; fi && \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund
# dist/shared/db/migrate.js resolves ../../../migrations, i.e. /app/migrations;
# dist/shared/version.js reads /app/package.json.
COPY --from=build /app/dist ./dist
COPY migrations ./migrations
# Files stay owned by root and read-only for the process; it writes only to /tmp
# (the worker's heartbeat file /tmp/worker-alive). The image's `node` user by number, so that
# Kubernetes can check runAsNonRoot without a runAsUser.
USER 1000:1000
EXPOSE 8080
# Health checks live in docker-compose.yml (gateway: /readyz, worker: heartbeat file).
CMD ["node", "--single-threaded-gc", "--initial-old-space-size=128", "--max-old-space-size=192", "dist/gateway/server.js"]

# syntax=docker/dockerfile:1
# One image for every process of the service; docker-compose.yml picks the entry point:
#   node dist/gateway/server.js       HTTP gateway (default CMD, port 8080)
#   node dist/workers/runner.js       Kafka consumer groups named in WORKERS (empty: all kinds)
#   node dist/shared/db/migrate-cli.js  create the database if missing, apply ./migrations, exit
# Node 20.19+ is required (package.json "engines"); the 20 line is past that.
ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: all dependencies, compile TypeScript into dist/ ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the only packages with install scripts (esbuild, ssh2, cpu-features,
# protobufjs) are dev/test tools that package.json's "allowScripts" denies anyway, and tsc
# needs none of them. (npm 10 in this image does not read "allowScripts" itself.)
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build

# ---- runtime: production dependencies, compiled code, migrations ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# Stack traces name the TypeScript sources (dist/ carries the source maps tsc writes).
ENV NODE_OPTIONS=--enable-source-maps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund
# dist/shared/db/migrate.js resolves ../../../migrations, i.e. /app/migrations;
# dist/shared/version.js reads /app/package.json.
COPY --from=build /app/dist ./dist
COPY migrations ./migrations
# Files stay owned by root and read-only for the process; it writes only to /tmp
# (the worker's heartbeat file /tmp/worker-alive).
USER node
EXPOSE 8080
# Health checks live in docker-compose.yml (gateway: /readyz, worker: heartbeat file).
CMD ["node", "dist/gateway/server.js"]

#!/usr/bin/env bash
# Builds the web UI (ui/) into src/perfsleuth/server/static/. Idempotent: installs
# node modules only when the lockfile changed, rebuilds only when a source changed.
set -euo pipefail
cd "$(dirname "$0")/../ui"
OUT=../src/perfsleuth/server/static
if ! command -v npm >/dev/null; then
  echo "build-ui: npm is missing; install Node.js 20 and npm (apt-get install nodejs npm)" >&2
  exit 1
fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # Not `npm ci`: it rejects this lockfile because the registry lists only some of
  # rollup's per-platform binaries. `npm install` installs the locked versions.
  npm install --no-audit --no-fund --loglevel=error
fi
# Rebuilt unless the build records the hash of these very sources: a build's age says
# nothing (a static/ copied from another checkout is newer than the sources it is not of,
# and tests then ran an old UI against new code).
SOURCES=(src index.html vite.config.ts tsconfig.json package.json package-lock.json)
hash=$(find "${SOURCES[@]}" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
if [ -f "$OUT/index.html" ] && [ "$(cat "$OUT/.source-hash" 2>/dev/null)" = "$hash" ]; then
  exit 0
fi
npm run --silent build
echo "$hash" >"$OUT/.source-hash"

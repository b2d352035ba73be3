#!/usr/bin/env bash
# Benchmarks (figures for notes, never asserted by tests). Usage: tools/bench/run.sh [members|aggregate|redemption|ingest] [standalone|distributed]
set -euo pipefail
cd "$(dirname "$0")/../.."
what="${1:-members}"; mode="${2:-standalone}"
npm run build --silent
if [ "$mode" = distributed ]; then
  export LOYALTY_ADMIN_TOKEN="${LOYALTY_ADMIN_TOKEN:-bench-admin}"
  bash tools/distributed/run.sh start
  trap 'bash tools/distributed/run.sh stop' EXIT
  export BENCH_URL="http://127.0.0.1:${PORT:-3000}" BENCH_MODE=distributed
fi
node -r ./tools/register-paths.js "dist/tools/bench/${what}.js"

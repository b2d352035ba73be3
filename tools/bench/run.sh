#!/usr/bin/env bash
# Benchmarks (figures for notes, never asserted by tests).
# Usage: tools/bench/run.sh [suite|members|aggregate|redemption|ingest|backlog|ledger-cost|finance] [standalone|distributed]
#   suite (default, `npm run bench`): every hot path of issue 7 as a ratio against the raw PostgreSQL
#   baselines (tools/bench/baselines) run in the same invocation; see tools/bench/suite.ts for its knobs
#   (BENCH_QUICK=1 scales it down, BENCH_SCENARIOS picks scenarios, BENCH_OUT names the JSON result).
#   standalone (default): the benchmark starts the standalone app in its own process on a fresh database.
#   distributed: starts Kafka (if needed) and the gateway + services (tools/distributed/run.sh) on a fresh
#   database, points the benchmark at the gateway (BENCH_URL) and that database (BENCH_DATABASE_URL), and
#   stops everything (and drops the database) at the end. Topics and consumer groups are not namespaced,
#   so only one topology may use a broker at a time: this takes the same lock as the e2e harness
#   (apps/standalone/src/testing/distributed.ts) and waits for it.
set -euo pipefail
cd "$(dirname "$0")/../.."
what="${1:-suite}"; mode="${2:-standalone}"
npm run build --silent
if [ "$mode" = distributed ]; then
  export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:9092}"
  lock="${TMPDIR:-/tmp}/loyalty-distributed-$(printf '%s' "$KAFKA_BROKERS" | sed -E 's/[^a-zA-Z0-9]+/_/g').lock"
  exec 9>"$lock"
  echo "waiting for $lock (another distributed topology may be running)" >&2
  flock -x -w 1800 9 || { echo "could not take $lock" >&2; exit 1; }
  db="bench_dist_$(date +%s)_$$"
  export LOYALTY_ADMIN_TOKEN="${LOYALTY_ADMIN_TOKEN:-bench-admin-$$}"
  export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/$db}"
  export DIST_STATE_DIR="${DIST_STATE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/loyalty-bench-dist-XXXXXX")}"
  # ports below the kernel's ephemeral range (32768 and up): a port picked there was sometimes taken
  # by an outgoing connection of this machine (EADDRINUSE at a service's start)
  export PORT="${PORT:-$((20000 + RANDOM % 6000))}" DIST_PORT_BASE="${DIST_PORT_BASE:-$((26000 + RANDOM % 600 * 10))}"
  # a 20,000-event backlog must not be refused while it is being enqueued
  if [ "$what" = backlog ]; then export LOYALTY_BACKLOG_LIMIT="${LOYALTY_BACKLOG_LIMIT:-1000000}"; fi
  cleanup() {
    bash tools/distributed/run.sh stop 9>&- || true
    [ "$DATABASE_URL" != "postgres://postgres@127.0.0.1:5432/$db" ] || psql -q -h 127.0.0.1 -U postgres -d postgres -c "drop database if exists $db with (force)" 9>&- || true
  }
  trap cleanup EXIT
  [ "$DATABASE_URL" != "postgres://postgres@127.0.0.1:5432/$db" ] || psql -q -h 127.0.0.1 -U postgres -d postgres -c "create database $db" 9>&-
  SKIP_BUILD=1 bash tools/distributed/run.sh start 9>&-
  export BENCH_URL="http://127.0.0.1:$PORT" BENCH_MODE=distributed BENCH_DATABASE_URL="${BENCH_DATABASE_URL:-$DATABASE_URL}"
fi
node -r ./tools/register-paths.js "dist/tools/bench/${what}.js" 9>&-

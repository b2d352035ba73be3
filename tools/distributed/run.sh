#!/usr/bin/env bash
# The distributed topology on this machine: gateway and each service as separate processes talking
# over a local Kafka broker (tools/kafka), sharing the PostgreSQL at DATABASE_URL.
#   tools/distributed/run.sh start   build, start Kafka if needed, start every app, wait until ready
#   tools/distributed/run.sh stop    stop the apps (and Kafka if this script started it)
#   tools/distributed/run.sh         start, then stay in the foreground until Ctrl-C
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
state="${DIST_STATE_DIR:-$root/.dist}"
mkdir -p "$state"
export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:9092}"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/loyalty}"
export LOYALTY_ADMIN_TOKEN="${LOYALTY_ADMIN_TOKEN:-dist-admin-$(date +%s)}"
gateway_port="${PORT:-3000}"
SERVICES=(ledger ingest redemption referral webhook)

stop() {
  for pidfile in "$state"/*.pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile"); kill "$pid" 2>/dev/null || true
  done
  for pidfile in "$state"/*.pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
  if [ -e "$state/kafka.started" ]; then bash tools/kafka/stop.sh >/dev/null 2>&1 || true; rm -f "$state/kafka.started"; fi
}

wait_http() { # url timeout_s
  for _ in $(seq 1 $(( $2 * 5 ))); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

start() {
  if ! (exec 3<>/dev/tcp/127.0.0.1/9092) 2>/dev/null; then
    bash tools/kafka/start.sh
    touch "$state/kafka.started"
  fi
  [ "${SKIP_BUILD:-0}" = 1 ] || npm run build --silent
  port=3101
  for app in "${SERVICES[@]}"; do
    main="dist/apps/$app/src/main.js"
    [ -f "$main" ] || continue
    PORT=$port nohup node -r ./tools/register-paths.js "$main" > "$state/$app.log" 2>&1 &
    echo $! > "$state/$app.pid"
    echo "$app: pid $(cat "$state/$app.pid"), health on :$port, log $state/$app.log"
    port=$((port + 1))
  done
  PORT=$gateway_port nohup node -r ./tools/register-paths.js dist/apps/gateway/src/main.js > "$state/gateway.log" 2>&1 &
  echo $! > "$state/gateway.pid"
  port=3101
  for app in "${SERVICES[@]}"; do
    [ -f "dist/apps/$app/src/main.js" ] || continue
    wait_http "http://127.0.0.1:$port/readyz" 120 || { echo "$app did not become ready:"; tail -40 "$state/$app.log"; stop; exit 1; }
    port=$((port + 1))
  done
  wait_http "http://127.0.0.1:$gateway_port/readyz" 120 || { echo "gateway did not become ready:"; tail -40 "$state/gateway.log"; stop; exit 1; }
  echo "gateway: http://127.0.0.1:$gateway_port (admin token: LOYALTY_ADMIN_TOKEN=$LOYALTY_ADMIN_TOKEN)"
}

case "${1:-run}" in
  start) start ;;
  stop) stop ;;
  run) trap stop EXIT INT TERM; start; wait ;;
  *) echo "usage: $0 [start|stop|run]"; exit 2 ;;
esac

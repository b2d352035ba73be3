#!/usr/bin/env bash
# The distributed topology on this machine: gateway and each service as separate processes talking
# over a local Kafka broker (tools/kafka), sharing the PostgreSQL at DATABASE_URL.
#   tools/distributed/run.sh start          build, start Kafka if needed, start every app, wait until ready
#   tools/distributed/run.sh stop           stop the apps (and Kafka if this script started it)
#   tools/distributed/run.sh restart <app>  stop one app (if it runs) and start it again with the
#                                           current environment, on the same port; wait until ready
#   tools/distributed/run.sh kill <app>     kill -9 one app (a crash: no shutdown hooks, no offset commit)
#   tools/distributed/run.sh                start, then stay in the foreground until Ctrl-C
# <app> is gateway, ledger, ingest, redemption, referral or webhook. Services answer /healthz,
# /readyz and /metrics on DIST_PORT_BASE (3101) upwards, in the order of SERVICES; the gateway
# serves the API on PORT (3000). State (pids, ports, logs) lives in DIST_STATE_DIR (.dist).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
state="${DIST_STATE_DIR:-$root/.dist}"
mkdir -p "$state"
export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:9092}"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/loyalty}"
export LOYALTY_ADMIN_TOKEN="${LOYALTY_ADMIN_TOKEN:-dist-admin-$(date +%s)}"
gateway_port="${PORT:-3000}"
port_base="${DIST_PORT_BASE:-3101}"
SERVICES=(ledger ingest redemption referral webhook)
# every port of the topology: a sandbox webhook may never target them (decisions, issue 8)
LOYALTY_RESERVED_PORTS="$gateway_port"
for i in "${!SERVICES[@]}"; do LOYALTY_RESERVED_PORTS="$LOYALTY_RESERVED_PORTS,$((port_base + i))"; done
export LOYALTY_RESERVED_PORTS

alive() { [ -e "$state/$1.pid" ] && kill -0 "$(cat "$state/$1.pid")" 2>/dev/null; }

# stop_app <app> <signal|->: signals the app (- = already signalled) and waits (10 s) for it to go, then kill -9
stop_app() {
  local pidfile="$state/$1.pid" pid
  [ -e "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  [ "$2" = - ] || kill "-$2" "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$pid" 2>/dev/null || true
  for _ in $(seq 1 25); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  rm -f "$pidfile"
}

stop() {
  local app
  # SIGTERM to all first (they drain in parallel), then wait for each
  for pidfile in "$state"/*.pid; do
    [ -e "$pidfile" ] || continue
    kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  for pidfile in "$state"/*.pid; do
    [ -e "$pidfile" ] || continue
    app=$(basename "$pidfile" .pid)
    stop_app "$app" -
  done
  if [ -e "$state/kafka.started" ]; then bash tools/kafka/stop.sh >/dev/null 2>&1 || true; rm -f "$state/kafka.started"; fi
}

main_of() { echo "dist/apps/$1/src/main.js"; }

# start_app <app> <port>: starts it in the background (log appended), records pid and port
start_app() {
  local app=$1 port=$2
  echo "=== $(date -u +%FT%TZ) starting $app on :$port" >> "$state/$app.log"
  PORT=$port nohup node $(cat tools/node-flags) ${DIST_NODE_ARGS:-} -r ./tools/register-paths.js "$(main_of "$app")" >> "$state/$app.log" 2>&1 &
  echo $! > "$state/$app.pid"
  echo "$port" > "$state/$app.port"
}

# wait_ready <app>: its /readyz answers 200 (within 120 s) from the process we started; fails at
# once when that process exits (e.g. EADDRINUSE), rather than trusting whoever answers on its port
wait_ready() {
  local app=$1 port
  port=$(cat "$state/$app.port")
  for _ in $(seq 1 600); do
    if ! alive "$app"; then echo "$app exited during startup:"; tail -40 "$state/$app.log"; return 1; fi
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null; then
      alive "$app" && return 0
    fi
    sleep 0.2
  done
  echo "$app did not become ready in 120 s:"; tail -40 "$state/$app.log"; return 1
}

start() {
  if ! (exec 3<>/dev/tcp/127.0.0.1/9092) 2>/dev/null; then
    bash tools/kafka/start.sh
    touch "$state/kafka.started"
  fi
  [ "${SKIP_BUILD:-0}" = 1 ] || npm run build --silent
  local port=$port_base app
  for app in "${SERVICES[@]}"; do
    [ -f "$(main_of "$app")" ] || continue
    start_app "$app" "$port"
    echo "$app: pid $(cat "$state/$app.pid"), health on :$port, log $state/$app.log"
    port=$((port + 1))
  done
  start_app gateway "$gateway_port"
  for app in "${SERVICES[@]}"; do
    [ -f "$(main_of "$app")" ] || continue
    wait_ready "$app" || { stop; exit 1; }
  done
  wait_ready gateway || { stop; exit 1; }
  echo "gateway: http://127.0.0.1:$gateway_port (admin token: LOYALTY_ADMIN_TOKEN=$LOYALTY_ADMIN_TOKEN)"
}

known_app() {
  [ "$1" = gateway ] && return 0
  local app
  for app in "${SERVICES[@]}"; do [ "$app" = "$1" ] && return 0; done
  echo "unknown app '$1' (gateway, ${SERVICES[*]})" >&2
  exit 2
}

restart() {
  local app=$1
  known_app "$app"
  [ -e "$state/$app.port" ] || { echo "$app was never started in $state" >&2; exit 2; }
  stop_app "$app" TERM
  start_app "$app" "$(cat "$state/$app.port")"
  wait_ready "$app"
  echo "$app: pid $(cat "$state/$app.pid") ready on :$(cat "$state/$app.port")"
}

crash() {
  known_app "$1"
  stop_app "$1" KILL
}

case "${1:-run}" in
  start) start ;;
  stop) stop ;;
  restart) restart "${2:?usage: $0 restart <app>}" ;;
  kill) crash "${2:?usage: $0 kill <app>}" ;;
  run) trap stop EXIT INT TERM; start; wait ;;
  *) echo "usage: $0 [start|stop|restart <app>|kill <app>|run]"; exit 2 ;;
esac

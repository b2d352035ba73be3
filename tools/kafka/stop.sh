#!/usr/bin/env bash
# Stop the broker started by start.sh: SIGTERM (controlled shutdown), wait up to
# $KAFKA_STOP_TIMEOUT seconds, then SIGKILL. Removes the pid file. Exits 0 when
# no broker is running.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ -d "$KAFKA_HOME" ]] || { kafka_log "no $KAFKA_HOME; nothing to stop"; exit 0; }
exec 9>"$KAFKA_HOME/.lock"
flock -w 120 9 || kafka_die "another start/stop holds $KAFKA_HOME/.lock"

pid="$(kafka_running_pid || true)"
if [[ -z "$pid" ]]; then
  # Pid file lost? Look for a broker running exactly this KAFKA_HOME's config.
  for p in /proc/[0-9]*; do
    pcmd="$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null || true)"
    if [[ "$pcmd" == *" kafka.Kafka $KAFKA_SERVER_PROPERTIES"* ]]; then
      pid="${p#/proc/}"
      kafka_log "no valid pid file, but found broker pid $pid running $KAFKA_SERVER_PROPERTIES"
      break
    fi
  done
fi
if [[ -z "$pid" ]]; then
  rm -f "$KAFKA_PID_FILE"
  kafka_log "broker not running"
  exit 0
fi

t0=$(kafka_now_ms)
kafka_log "stopping broker pid $pid (SIGTERM, up to ${KAFKA_STOP_TIMEOUT}s) ..."
kill -TERM "$pid" 2>/dev/null || true
deadline=$((SECONDS + KAFKA_STOP_TIMEOUT))
while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
  sleep 0.2
done
if kill -0 "$pid" 2>/dev/null; then
  kafka_log "broker still alive after ${KAFKA_STOP_TIMEOUT}s; SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
fi
rm -f "$KAFKA_PID_FILE"
kafka_log "broker stopped after $(kafka_since "$t0")"

#!/usr/bin/env bash
# Stop the broker and delete its data, logs and generated config (all topics,
# offsets and the cluster id are lost; the next start.sh formats afresh).
# The fetched jars are kept; pass --all to delete the whole $KAFKA_HOME.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

"$KAFKA_SCRIPT_DIR/stop.sh"
if [[ "${1:-}" == "--all" ]]; then
  rm -rf "$KAFKA_HOME"
  kafka_log "removed $KAFKA_HOME"
else
  rm -rf "$KAFKA_DATA_DIR" "$KAFKA_LOG_DIR" "$KAFKA_CONFIG_DIR"
  kafka_log "removed data, logs and config under $KAFKA_HOME (jars kept)"
fi

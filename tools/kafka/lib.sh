# shellcheck shell=bash
# Shared settings and helpers for tools/kafka/*.sh. Sourced, never executed.
#
# Environment (all optional):
#   KAFKA_VERSION          Kafka version fetched from Maven Central   (4.1.1)
#   KAFKA_HOME             where jars, config, data, logs, pid live    ($REPO/.kafka)
#   KAFKA_PORT             client (PLAINTEXT) port on 127.0.0.1        (9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller port on 127.0.0.1          (9093)
#   KAFKA_PARTITIONS       num.partitions for auto-created topics      (4)
#   KAFKA_OFFSETS_PARTITIONS  partitions of __consumer_offsets         (1)
#   KAFKA_HEAP_OPTS        broker heap                                 (-Xms256m -Xmx512m)
#   KAFKA_READY_TIMEOUT    seconds start.sh waits for readiness        (90)
#   KAFKA_STOP_TIMEOUT     seconds stop.sh waits after SIGTERM         (30)
#   KAFKA_CLUSTER_ID       cluster id used when formatting storage     (random)

# shellcheck disable=SC2034 # used by the scripts that source this file
KAFKA_SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
KAFKA_REPO_ROOT="$(cd "$KAFKA_SCRIPT_DIR/../.." && pwd -P)"

KAFKA_VERSION="${KAFKA_VERSION:-4.1.1}"
KAFKA_HOME="$(realpath -m "${KAFKA_HOME:-$KAFKA_REPO_ROOT/.kafka}")"
KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_PARTITIONS="${KAFKA_PARTITIONS:-4}"
KAFKA_OFFSETS_PARTITIONS="${KAFKA_OFFSETS_PARTITIONS:-1}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
KAFKA_READY_TIMEOUT="${KAFKA_READY_TIMEOUT:-90}"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"

KAFKA_HOST=127.0.0.1
KAFKA_BOOTSTRAP="$KAFKA_HOST:$KAFKA_PORT"
KAFKA_LIBS="$KAFKA_HOME/libs"
KAFKA_CONFIG_DIR="$KAFKA_HOME/config"
KAFKA_DATA_DIR="$KAFKA_HOME/data"
KAFKA_LOG_DIR="$KAFKA_HOME/logs"
KAFKA_PID_FILE="$KAFKA_HOME/kafka.pid"
KAFKA_SERVER_PROPERTIES="$KAFKA_CONFIG_DIR/server.properties"
KAFKA_SERVER_LOG="$KAFKA_LOG_DIR/server.log"

kafka_now_ms() { echo $(($(date +%s%N) / 1000000)); }
kafka_since() { local ms=$(($(kafka_now_ms) - $1)); printf '%d.%01ds' $((ms / 1000)) $((ms % 1000 / 100)); }
kafka_log() { printf '[kafka] %s\n' "$*" >&2; }
kafka_die() { printf '[kafka] ERROR: %s\n' "$*" >&2; exit 1; }

# Kafka 4.x brokers and tools need Java 17+.
kafka_require_java() {
  command -v java >/dev/null 2>&1 || kafka_die "java not found on PATH (Kafka $KAFKA_VERSION needs Java 17+)"
  local v major
  v="$(java -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')"
  major="${v%%.*}"
  [[ "$major" == 1 ]] && major="$(echo "$v" | cut -d. -f2)"
  [[ "$major" =~ ^[0-9]+$ ]] || kafka_die "cannot parse java version from: $(java -version 2>&1 | head -1)"
  ((major >= 17)) || kafka_die "Java $v found; Kafka $KAFKA_VERSION needs Java 17+"
}

# Stamp identifying a complete fetch: the version plus the pom's content.
kafka_fetch_stamp() {
  printf '%s %s\n' "$KAFKA_VERSION" "$(cksum <"$KAFKA_SCRIPT_DIR/pom.xml" | awk '{print $1}')"
}

kafka_is_fetched() {
  [[ -f "$KAFKA_LIBS/.fetched" ]] && [[ "$(cat "$KAFKA_LIBS/.fetched")" == "$(kafka_fetch_stamp)" ]]
}

# log4j2 config for CLI tools: warnings and errors to stderr only.
kafka_write_tools_log4j() {
  mkdir -p "$KAFKA_CONFIG_DIR"
  cat >"$KAFKA_CONFIG_DIR/tools-log4j2.properties" <<'EOF'
status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = STDERR
EOF
}

# Run a Java main class from the fetched jars with a small client-side JVM.
#   kafka_run_class <fqcn> [args...]
# Set KAFKA_TOOL_TIMEOUT=<seconds> to bound its run time.
kafka_run_class() {
  local cls="$1"
  shift
  [[ -f "$KAFKA_CONFIG_DIR/tools-log4j2.properties" ]] || kafka_write_tools_log4j
  local -a cmd=(java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
    -Djava.awt.headless=true
    -Dlog4j2.configurationFile="$KAFKA_CONFIG_DIR/tools-log4j2.properties"
    -cp "$KAFKA_LIBS/*" "$cls" "$@")
  if [[ -n "${KAFKA_TOOL_TIMEOUT:-}" ]]; then
    timeout "$KAFKA_TOOL_TIMEOUT" "${cmd[@]}"
  else
    "${cmd[@]}"
  fi
}

# Is something accepting TCP connections on host:port?
kafka_port_open() {
  local host="$1" port="$2"
  timeout 2 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null
}

# Pid from the pid file when that process is alive and is a Kafka broker.
kafka_running_pid() {
  [[ -f "$KAFKA_PID_FILE" ]] || return 1
  local pid
  pid="$(cat "$KAFKA_PID_FILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  local cmdline
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
  [[ "$cmdline" == *kafka.Kafka* ]] || return 1
  printf '%s\n' "$pid"
}

# Real readiness check against the client listener: asks the broker for its
# metadata and API versions (BrokerApiVersionsCommand: bootstrap, Metadata,
# then ApiVersions to every broker listed). A broker is only listed in Metadata
# once it is registered and unfenced, i.e. able to lead partitions; 4.x also
# prints "isFenced: false" for it.
kafka_broker_ready() {
  kafka_port_open "$KAFKA_HOST" "$KAFKA_PORT" || return 1
  local out
  out="$(KAFKA_TOOL_TIMEOUT=30 kafka_run_class org.apache.kafka.tools.BrokerApiVersionsCommand \
    --bootstrap-server "$KAFKA_BOOTSTRAP" 2>/dev/null)" || return 1
  # e.g. "127.0.0.1:9092 (id: 1 rack: null isFenced: false) -> (" (isFenced: since 4.0)
  grep -q '(id: [0-9]*.*) -> (' <<<"$out" || return 1
  ! grep -q 'isFenced: true' <<<"$out"
}

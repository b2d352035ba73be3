#!/usr/bin/env bash
# Download the Kafka broker + CLI jars (and their runtime deps) from Maven Central
# into $KAFKA_HOME/libs. Idempotent: does nothing when that version (and this pom)
# was already fetched. Uses the default Maven local repository (~/.m2).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if kafka_is_fetched; then
  kafka_log "Kafka $KAFKA_VERSION jars already in $KAFKA_LIBS"
  exit 0
fi

command -v mvn >/dev/null 2>&1 || kafka_die "mvn not found on PATH (needed to fetch Kafka jars from Maven Central)"
kafka_require_java

mkdir -p "$KAFKA_HOME"
# Fetch into a scratch dir and swap it in, so an interrupted fetch or a version
# change never leaves jars of two versions on the classpath.
tmp="$(mktemp -d "$KAFKA_HOME/.libs.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"

kafka_log "fetching Kafka $KAFKA_VERSION jars from Maven Central ..."
if ! mvn -q -B -Dstyle.color=never -f "$KAFKA_SCRIPT_DIR/pom.xml" \
  -Dkafka.version="$KAFKA_VERSION" \
  org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$tmp/jars" >"$tmp/mvn.log" 2>&1; then
  cat "$tmp/mvn.log" >&2
  kafka_die "mvn could not fetch Kafka $KAFKA_VERSION (is Maven Central reachable? does the version exist?)"
fi
mv "$tmp/jars"/*.jar "$tmp"/
rm -rf "$tmp/jars" "$tmp/mvn.log"

[[ -f "$tmp/kafka_2.13-$KAFKA_VERSION.jar" && -f "$tmp/kafka-tools-$KAFKA_VERSION.jar" ]] \
  || kafka_die "fetch finished but kafka_2.13-$KAFKA_VERSION.jar / kafka-tools-$KAFKA_VERSION.jar are missing in $tmp"

kafka_fetch_stamp >"$tmp/.fetched"
rm -rf "$KAFKA_LIBS"
mv "$tmp" "$KAFKA_LIBS"
trap - EXIT
kafka_log "Kafka $KAFKA_VERSION: $(find "$KAFKA_LIBS" -name '*.jar' | wc -l) jars in $KAFKA_LIBS"

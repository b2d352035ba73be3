#!/usr/bin/env bash
# The test command (npm test): unit, PostgreSQL integration, Kafka integration and HTTP end-to-end
# tests, in that order. Starts a local Kafka broker when none is running (and stops it after).
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
started_kafka=0
cleanup() {
  if [ "$started_kafka" = 1 ]; then bash tools/kafka/stop.sh >/dev/null 2>&1 || true; fi
  rm -rf "$out"
}
trap cleanup EXIT

# With a Docker engine (and no KAFKA_BROKERS given) the int and e2e tiers start PostgreSQL, Kafka,
# EventStoreDB and Redis as containers (libs/testing/src/containers.js); otherwise the local servers.
if [ -z "${KAFKA_BROKERS:-}" ] && node -e 'require("./libs/testing/src/containers").dockerAvailable().then((d) => process.exit(d.ok ? 0 : 1))'; then
  echo "== Docker engine found: the int and e2e tiers start their servers as containers (testcontainers)"
else
  export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:9092}"
  if ! (exec 3<>/dev/tcp/127.0.0.1/9092) 2>/dev/null; then
    echo "== starting Kafka (tools/kafka/start.sh)"
    bash tools/kafka/start.sh || { echo "Kafka did not start"; exit 1; }
    started_kafka=1
  fi
fi

echo "== lint (module boundaries)"
npm run lint --silent || exit 1

echo "== build (type check)"
npm run api:types --silent || exit 1
npx tsc -p tsconfig.json --noEmit || exit 1
npm run build --silent || exit 1

status=0
for tier in unit int e2e; do
  echo "== $tier tests"
  npx jest -c "jest.$tier.config.js" --json --outputFile="$out/$tier.json" "$@" || status=1
done

node -e '
const fs = require("fs"); let p = 0, f = 0, s = 0;
for (const t of ["unit", "int", "e2e"]) {
  const file = process.argv[1] + "/" + t + ".json";
  if (!fs.existsSync(file)) { console.log(t + ": no results"); f++; continue; }
  const r = JSON.parse(fs.readFileSync(file, "utf8"));
  console.log(`${t}: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + (r.numTodoTests||0)} skipped (${r.numTotalTestSuites} suites)`);
  p += r.numPassedTests; f += r.numFailedTests + (r.numRuntimeErrorTestSuites || 0); s += r.numPendingTests + (r.numTodoTests||0);
}
console.log(`${p} passed, ${f} failed, ${s} skipped`);
' "$out"
exit $status

#!/usr/bin/env bash
# Side-by-side benchmark of two revisions, in alternating runs (issue 7): on a shared two-core machine
# the figures move by ±15 % between runs minutes apart, so a change is judged on the medians of
# several alternating runs of both sides, CPU per operation first.
#
#   tools/bench/ab.sh <base-rev> [rounds]      # the base revision against the working tree, rounds (default 3) each
#   BENCH_SCENARIOS=enrol,redeem tools/bench/ab.sh HEAD~2 4
#   AB_MODE=distributed BENCH_QUICK=1 BENCH_SCENARIOS=ingest tools/bench/ab.sh HEAD~2   # gateway → Kafka → services
#
# AB_MODE=distributed runs each side through `tools/bench/run.sh suite distributed` (its own topology
# on a fresh database, one at a time on the broker) instead of the standalone suite; the service's CPU
# is then not measured (several processes), PostgreSQL's is.
#
# The base revision is checked out in a temporary git worktree (sharing node_modules) and built there;
# the working tree is built as it is. Every run is the suite (tools/bench/suite.ts; standalone unless AB_MODE) with the
# environment given (BENCH_SCENARIOS, BENCH_SECONDS, …; BENCH_BASELINE_SECONDS defaults to 1 here),
# base and working tree taking turns. The summary prints, per scenario and side, each run's figure and
# CPU per operation (service + PostgreSQL), and their medians.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
base=${1:?usage: tools/bench/ab.sh <base-rev> [rounds]}
rounds=${2:-3}
sha=$(git rev-parse --short "$base")
work=$(mktemp -d "${TMPDIR:-/tmp}/loyalty-ab-XXXXXX")
tree="$work/base-$sha"
cleanup() { git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || true; git -C "$root" worktree prune; }
trap cleanup EXIT

echo "[ab] base $sha in $tree; working tree $root; $rounds round(s); results in $work"
git worktree add --detach "$tree" "$base" >/dev/null
ln -s "$root/node_modules" "$tree/node_modules"
(cd "$tree" && npm run build --silent >/dev/null)
(cd "$root" && npm run build --silent >/dev/null)

export BENCH_BASELINE_SECONDS=${BENCH_BASELINE_SECONDS:-1}
for ((i = 1; i <= rounds; i++)); do
  for side in base head; do
    dir=$([ "$side" = base ] && echo "$tree" || echo "$root")
    echo "[ab] round $i: $side"
    if [ "${AB_MODE:-standalone}" = distributed ]; then
      run=(bash tools/bench/run.sh suite distributed)
    else
      run=(node -r ./tools/register-paths.js dist/tools/bench/suite.js)
    fi
    (cd "$dir" && BENCH_OUT="$work/$side-$i.json" "${run[@]}" >"$work/$side-$i.log" 2>&1) \
      || { echo "[ab] $side run $i failed: $work/$side-$i.log"; exit 1; }
  done
done

node - "$work" "$rounds" "$sha" <<'EOF'
const fs = require('fs');
const [work, rounds, sha] = process.argv.slice(2);
const cpu = /CPU per op: (?:service ([0-9.]+) ms[^+]*\+ )?PostgreSQL ([0-9.]+) ms/;
const instr = /instructions per op: service ([0-9.?]+) M \+ PostgreSQL ([0-9.?]+) M/;
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const runs = { base: [], head: [] };
for (const side of ['base', 'head']) for (let i = 1; i <= Number(rounds); i++) runs[side].push(JSON.parse(fs.readFileSync(`${work}/${side}-${i}.json`, 'utf8')));
const paths = runs.head[0].rows.map((r) => r.path);
for (const path of paths) {
  console.log(`\n${path}`);
  for (const side of ['base', 'head']) {
    const rows = runs[side].map((r) => r.rows.find((x) => x.path === path)).filter(Boolean);
    const fig = rows.map((r) => r.value);
    const ratio = rows.map((r) => r.ratio_value).filter((x) => typeof x === 'number');
    const c = rows.map((r) => cpu.exec(r.detail || '')).filter(Boolean);
    const svc = c.filter((m) => m[1]).map((m) => Number(m[1]));
    const pg = c.map((m) => Number(m[2]));
    const ins = rows.map((r) => instr.exec(r.detail || '')).filter(Boolean);
    const insSvc = ins.map((m) => Number(m[1])).filter((x) => !Number.isNaN(x));
    const insPg = ins.map((m) => Number(m[2])).filter((x) => !Number.isNaN(x));
    const unit = rows[0]?.unit ?? '';
    console.log(`  ${side === 'base' ? `base ${sha}` : 'working tree'}: ${fig.map((v) => v.toFixed(0)).join(', ')} ${unit} (median ${median(fig).toFixed(0)})`
      + (ratio.length ? `; ratio median ${median(ratio).toFixed(3)}` : '')
      + (c.length ? `; CPU per op median ${svc.length ? `${median(svc).toFixed(3)} + ` : ''}${median(pg).toFixed(3)} ms` : '')
      + (insSvc.length || insPg.length ? `; instructions per op median ${insSvc.length ? median(insSvc).toFixed(3) : '?'} + ${insPg.length ? median(insPg).toFixed(3) : '?'} M (${ins.map((m) => `${m[1]}+${m[2]}`).join(', ')})` : ''));
  }
}
EOF

#!/usr/bin/env bash
# Renders the running service's /docs (and /docs/api/errors) in headless Chromium with every host
# other than the service's unresolvable, i.e. as a machine without internet sees it, and saves
# screenshots. Fails when the API reference did not render (blank page, or the bundle failed).
#
#   npm start &                                  # or any running service
#   npm run docs:screenshot -- [base-url] [out-dir]   # default http://localhost:3000 and ./.screenshots
#
# Needs Chromium (Debian: apt-get install chromium). Not part of npm test.
set -euo pipefail
base="${1:-${BASE:-http://localhost:3000}}"
out="${2:-.screenshots}"
chrome="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
[ -n "$chrome" ] || { echo "Chromium not found (Debian: apt-get install chromium)"; exit 2; }
mkdir -p "$out"
host="$(echo "$base" | sed -E 's#^[a-z]+://([^/:]+).*#\1#')"
# offline: only the service's own host resolves; every CDN or font host fails
offline=(--host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE ${host}, EXCLUDE localhost, EXCLUDE 127.0.0.1")
common=(--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --no-first-run
  --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$(mktemp -d)")

curl -sf "$base/readyz" > /dev/null || { echo "no service answering at $base"; exit 1; }

shot() { # url file [chromium flags…]
  "$chrome" "${common[@]}" "${offline[@]}" --window-size=1400,1000 "${@:3}" --screenshot="$2" "$1" > /dev/null 2>&1
  echo "screenshot: $2 ($(stat -c %s "$2") bytes)"
}
# the reference fetches /openapi.json and renders it: give it (virtual) time; the catalogue is static HTML
shot "$base/docs" "$out/docs.png" --virtual-time-budget=15000
shot "$base/docs/api/errors" "$out/errors.png"

# the rendered DOM of /docs, offline: the reference must show the document (version, intro) and its first operations
dom="$("$chrome" "${common[@]}" "${offline[@]}" --virtual-time-budget=15000 --dump-dom "$base/docs" 2>/dev/null)"
fail=0
for text in 'OAS 3.1.0' 'Points, tiers, referrals and vouchers' 'Verify a key' 'Read the programme'; do
  if grep -q "$text" <<< "$dom"; then echo "rendered: $text"; else echo "MISSING in the rendered page: $text"; fail=1; fi
done
if [ "$fail" = 1 ]; then echo "FAIL: /docs did not render offline"; exit 1; fi
echo "OK: /docs renders offline from $base (screenshots in $out)"

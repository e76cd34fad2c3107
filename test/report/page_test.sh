#!/usr/bin/env bash
# Builds the results page from the fixture runs, opens it in headless Chromium
# and checks that every chart drew pixels, that the page is self-contained
# and that bad input is refused. Leaves page.html and page.png in OUT_DIR.
#
#   page_test.sh REPORT_DIR FIXTURES_DIR OUT_DIR
# Exit 77 (skipped) when node, Chromium or the page's npm packages are
# missing, except under CI=true, where that is a failure.
set -euo pipefail
report=$1 fixtures=$2 out=$3
mkdir -p "$out"

missing() {
  echo "report_page_test: $1" >&2
  if [[ "${CI:-}" == true ]]; then exit 1; fi
  exit 77
}
command -v node >/dev/null || missing "node is not installed"
chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n "$chromium" ]] || missing "chromium is not installed (apt-get install chromium)"
[[ -d "$report/node_modules/chart.js" ]] ||
  missing "the page's packages are not installed (npm ci --prefix tools/report)"

fail() { echo "report_page_test: FAILED: $1" >&2; exit 1; }

page=$("$report/build-page.mjs" --base "$fixtures/base" --out "$out/page.html" "$fixtures/head")
[[ "$page" == "$out/page.html" ]] || fail "build-page printed '$page'"

# Self-contained: nothing is fetched when the page opens.
if grep -Eq '<script[^>]+src=|<link[^>]+href=|https?://[^" ]+\.(js|css)' "$out/page.html"; then
  fail "the page refers to an external script or style sheet"
fi
for want in 'Memory tiers' 'packing + eviction' 'store_bench' 'Time vs base'; do
  grep -q "$want" "$out/page.html" || fail "the page lacks '$want'"
done

browser() {
  local profile
  profile=$(mktemp -d)
  timeout 90 "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --hide-scrollbars "$@" 2>/dev/null
  local status=$?
  rm -rf "$profile"
  return $status
}

body=$(browser --virtual-time-budget=5000 --dump-dom "file://$out/page.html" | grep -o '<body[^>]*>' || true)
expected=$(sed -n 's/.*data-charts-expected="\([0-9]*\)".*/\1/p' <<<"$body")
rendered=$(sed -n 's/.*data-charts-rendered="\([0-9]*\)".*/\1/p' <<<"$body")
echo "report_page_test: $rendered of $expected charts rendered"
# Memory: all policies together and one per policy (5); store_bench:
# throughput and latency (2).
[[ "${expected:-0}" -ge 7 ]] || fail "expected at least 7 charts, the page declared '${expected:-none}'"
[[ "$rendered" == "$expected" ]] || fail "only ${rendered:-0} of $expected charts have pixels"

rm -f "$out/page.png"
browser --window-size=1280,3400 --screenshot="$out/page.png" "file://$out/page.html" >/dev/null
[[ $(stat -c %s "$out/page.png" 2>/dev/null || echo 0) -gt 20000 ]] || fail "no screenshot"
echo "report_page_test: screenshot $out/page.png"

# Malformed input is refused with exit 3, a missing directory too.
bad=$(mktemp -d)
echo '{"benchmarks": [' >"$bad/broken_bench.json"
set +e
"$report/build-page.mjs" --out "$bad/x.html" "$bad" 2>/dev/null
status=$?
"$report/build-page.mjs" --out "$bad/x.html" "$bad/none" 2>/dev/null
status_missing=$?
set -e
rm -rf "$bad"
[[ $status == 3 ]] || fail "malformed JSON gave exit $status, not 3"
[[ $status_missing == 3 ]] || fail "a missing directory gave exit $status_missing, not 3"
echo "report_page_test: ok"

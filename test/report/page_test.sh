#!/usr/bin/env bash
# Builds the results page from fixed runs, opens it in headless Chromium and
# checks what a reader sees: the verdict is the run record's (a failed run is
# never shown as passed, a folder without a record never as green), every
# family's status, memory figures compared like with like, deterministic
# counters and pack_bench's sizes, time per operation for the end-to-end
# cases, capped runs flagged, stores side by side, sustainable rates, whole labels, a history
# chart, and that every chart drew pixels and bad input is refused. Leaves
# page.html and page.png for each fixture in OUT_DIR. The page reads every
# run through skiff-compare ($SKIFF_COMPARE, which ctest sets).
#
#   page_test.sh REPORT_DIR FIXTURES_DIR OUT_DIR
# Fixtures: quick/ (a quick run of store, pack, kv and memory families by
# tools/bench, one kv case capped), failed/ (a run whose families failed or
# did not run, beside a memory.json of another run), full/ (the memory
# family at 200,000 documents), no-record/ (files without run.json),
# base/ (an earlier store_bench), compare-quick.json (skiff-compare --format
# json of base/ against quick/'s store_bench), history.jsonl (three runs).
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

failures=0
fail() { echo "report_page_test: FAILED: $1" >&2; failures=$((failures + 1)); }

browser() {
  local profile status
  profile=$(mktemp -d)
  set +e
  timeout 90 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic \
    --disable-background-networking --disable-component-update --disable-sync --no-first-run \
    --user-data-dir="$profile" --hide-scrollbars "$@" 2>/dev/null
  status=$?
  set -e
  rm -rf "$profile"
  return $status
}

# Builds fixture $1's page with build-page args $2..., dumps its DOM after the
# charts ran, and checks that every chart drew and no label was cut.
render() {
  local name=$1
  shift
  "$report/build-page.mjs" "$@" --out "$out/$name.html" "$fixtures/$name" >/dev/null ||
    { fail "build-page refused the $name fixture"; return; }
  if grep -Eq '<script[^>]+src=|<link[^>]+href=|https?://[^" ]+\.(js|css)' "$out/$name.html"; then
    fail "$name: the page refers to an external script or style sheet"
  fi
  browser --virtual-time-budget=5000 --dump-dom "file://$out/$name.html" >"$out/$name.dom" ||
    fail "$name: chromium could not open the page"
  local body expected rendered cut
  body=$(grep -o '<body[^>]*>' "$out/$name.dom" || true)
  expected=$(sed -n 's/.*data-charts-expected="\([0-9]*\)".*/\1/p' <<<"$body")
  rendered=$(sed -n 's/.*data-charts-rendered="\([0-9]*\)".*/\1/p' <<<"$body")
  cut=$(sed -n 's/.*data-labels-cut="\([0-9]*\)".*/\1/p' <<<"$body")
  echo "report_page_test: $name: ${rendered:-0} of ${expected:-?} charts rendered, ${cut:-?} labels cut"
  [[ -n "$expected" && "$rendered" == "$expected" ]] ||
    fail "$name: only ${rendered:-0} of ${expected:-0} charts have pixels"
  charts=$expected
  [[ "$cut" == 0 ]] || fail "$name: ${cut:-?} chart labels do not fit their axis"
}

has() { grep -q -- "$2" "$out/$1.dom" || fail "$1: the page lacks '$2'"; }
lacks() { if grep -q -- "$2" "$out/$1.dom"; then fail "$1: the page shows '$2'"; fi; }

# A good quick run, with a history and a base.
render quick --base "$fixtures/base" --compare "$fixtures/compare-quick.json" \
  --history "$fixtures/history.jsonl"
# Memory: all policies and one per policy (5); per family throughput,
# latency and history where it has them.
[[ "${charts:-0}" -ge 12 ]] || fail "quick: expected at least 12 charts, the page declared ${charts:-0}"
has quick 'data-verdict="ok"'
has quick 'Every family that ran passed its checks'
has quick '<tr data-family="kv_bench"><td class="name"><a href="#family-kv_bench">kv_bench</a></td><td class="ok">ok</td>'
has quick 'Stores side by side'
has quick '<h3>Sustainable rate</h3>'  # the open-loop search's answer
has quick '<td class="name">sustainable/get/memory/commit</td><td>4.86 k/s</td>'
has quick 'statements_per_write ≡'  # a deterministic counter
has quick 'hot_heap_bytes'          # pack_bench's sizes
has quick 'class="flag capped"'     # the capped kv case
has quick 'data-chart="history"'
has quick 'Time vs base'
# The change against the base carries the comparer's verdict (one judge):
# one repetition per side is too few for one, and the page says so.
has quick 'data-verdict="too_few_repetitions"'
has quick 'Judged vs base'
has quick 'data-memory="scaled"'    # a quick run's RSS is not judged...
grep -A1 'RSS after idle, packing + eviction' "$out/quick.dom" | grep -q 'not judged' ||
  fail "quick: the RSS target is judged on a run of another size"
# End-to-end times are per operation: microseconds, not the scenario's seconds.
kv_time=$(grep -o 'data-case="set-small/pipelined/memory/commit/iterations:1/manual_time">.*' "$out/quick.dom" |
  sed -E 's|.*</span></td><td>([^<]*)</td>.*|\1|' || true)
[[ "$kv_time" == *µs* || "$kv_time" == *ns* ]] ||
  fail "quick: set-small/pipelined shows '$kv_time', not a time per operation"
rm -f "$out/quick.png"
browser --window-size=1280,4000 --screenshot="$out/quick.png" "file://$out/quick.html" >/dev/null
[[ $(stat -c %s "$out/quick.png" 2>/dev/null || echo 0) -gt 20000 ]] || fail "no screenshot"

# A failed run: never green, every family shown as it ended, and the
# memory.json of another run is not shown as this one's.
render failed
has failed 'data-verdict="failed"'
lacks failed 'passed its checks'
has failed '<td class="bad">failed</td>'
has failed '<td class="skip">not selected</td>'
has failed '<td class="skip">not run: interrupted</td>'
has failed 'data-memory="stale"'
lacks failed 'data-chart="rss-all"'

# Files without a run record: no verdict is claimed.
render no-record
has no-record 'data-verdict="unknown"'
lacks no-record 'passed its checks'

# The memory family at the size its targets are for: judged.
render full
has full 'data-memory="judged"'
has full '<span class="ok">met</span>'

# Malformed input is refused with exit 3, a missing directory too, and a
# Google Benchmark file with bare NaN (not from the suite's main) as well.
bad=$(mktemp -d)
echo '{"benchmarks": [' >"$bad/broken_bench.json"
nan=$(mktemp -d)
echo '{"context": {}, "benchmarks": [{"name": "x", "real_time": NaN}]}' >"$nan/x_bench.json"
set +e
"$report/build-page.mjs" --out "$bad/x.html" "$bad" 2>/dev/null
status=$?
"$report/build-page.mjs" --out "$bad/x.html" "$bad/none" 2>/dev/null
status_missing=$?
"$report/build-page.mjs" --out "$nan/x.html" "$nan" 2>/dev/null
status_nan=$?
"$report/build-page.mjs" --bogus 2>/dev/null
status_usage=$?
set -e
rm -rf "$bad" "$nan"
[[ $status == 3 ]] || fail "malformed JSON gave exit $status, not 3"
[[ $status_missing == 3 ]] || fail "a missing directory gave exit $status_missing, not 3"
[[ $status_nan == 3 ]] || fail "bare NaN gave exit $status_nan, not 3"
[[ $status_usage == 64 ]] || fail "an unknown option gave exit $status_usage, not 64"

if ((failures > 0)); then
  echo "report_page_test: $failures check(s) FAILED" >&2
  exit 1
fi
echo "report_page_test: ok (pages and screenshot in $out)"

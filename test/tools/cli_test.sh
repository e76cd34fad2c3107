#!/usr/bin/env bash
# The suite as its users run it: every tool answers --help (and only that),
# options take "--x v" and "--x=v", missing values and unknown flags give the
# suite's usage code, a filter selects across families, the JSON is valid and
# says what ran, a noisy machine is reported, and a bench executable run by
# hand stops the PostgreSQL it started.
#
#   cli_test.sh REPO_ROOT BUILD_DIR
# Needs node (JSON checks). The PostgreSQL check is skipped without
# PostgreSQL's binaries, except under CI=true.
set -uo pipefail
root=$1 build=$2
work=$(mktemp -d)
chmod 755 "$work"  # PostgreSQL runs as its own user when this runs as root
burners=()
cleanup() {
  for pid in "${burners[@]+"${burners[@]}"}"; do kill "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() { echo "cli_test: FAILED: $*" >&2; failures=$((failures + 1)); }
ok() { echo "cli_test: ok: $*"; }
store_bench=$build/bench/store_bench
kv_bench=$build/bench/kv_bench
compare=$build/tools/compare/skiff-compare

# Runs "$@", keeping stdout, stderr and the exit code.
run() {
  "$@" >"$work/out" 2>"$work/err"
  code=$?
}

# --help: exit 0, a usage text, and nothing else happens.
for tool in tools/bench tools/test tools/setup tools/pg-up tools/pg-down tools/aa-check \
  tools/release-bench tools/report/build-page; do
  run env SKIFF_PG_STATE="$work/pg-help" "$root/$tool" --help
  if [[ $code -ne 0 ]] || ! grep -qi 'usage' "$work/out"; then
    fail "$tool --help: exit $code, $(head -c 200 "$work/out" "$work/err")"
  else
    ok "$tool --help"
  fi
done
[[ ! -e "$work/pg-help" ]] || fail "tools/pg-up --help created a cluster state directory"
mkdir -p "$work/pg-keep/data" && echo 15 >"$work/pg-keep/data/PG_VERSION"
run env SKIFF_PG_STATE="$work/pg-keep" "$root/tools/pg-down" --help
[[ -e "$work/pg-keep/data/PG_VERSION" ]] && ok "tools/pg-down --help removes nothing" ||
  fail "tools/pg-down --help removed a cluster"
for exe in "$store_bench" "$kv_bench" "$compare" "$build/tools/compare/skiff-merge-runs"; do
  run "$exe" --help
  [[ $code -eq 0 ]] && grep -qi 'usage' "$work/out" && ok "$(basename "$exe") --help" ||
    fail "$(basename "$exe") --help: exit $code"
done
for exe in "$store_bench" "$compare" "$root/tools/bench" "$root/tools/release-bench"; do
  run "$exe" --version
  [[ $code -eq 0 ]] && grep -q '[0-9]' "$work/out" && ok "$(basename "$exe") --version" ||
    fail "$(basename "$exe") --version: exit $code"
done

# One usage code (64) for unknown flags and missing values, never a shell error.
for cmd in "$store_bench --bogus" "$store_bench --store" "$store_bench --profile fast" \
  "$compare --bogus a b" "$root/tools/release-bench --rounds" "$root/tools/release-bench --bogus a b" \
  "$root/tools/bench --store" "$root/tools/bench stray" "$root/tools/pg-up --bogus" \
  "$root/tools/pg-down --release" "$root/tools/aa-check"; do
  run $cmd
  if [[ $code -ne 64 ]] || grep -q 'unbound variable\|command not found' "$work/err"; then
    fail "'$cmd' gave exit $code: $(head -c 300 "$work/err")"
  else
    ok "'$cmd' is a usage error (64)"
  fi
done

# --x v and --x=v mean the same; Google Benchmark's flags take both too.
run "$store_bench" --store memory --benchmark_list_tests
spaced=$(cat "$work/out")
run "$store_bench" --store=memory --benchmark_list_tests
[[ -n "$spaced" && "$spaced" == "$(cat "$work/out")" ]] && ok "--store v and --store=v agree" ||
  fail "--store memory and --store=memory list different cases"
run "$store_bench" --store memory --benchmark_filter WriteOne --benchmark_list_tests
[[ $code -eq 0 && $(grep -c . "$work/out") -eq 1 ]] && ok "--benchmark_filter v" ||
  fail "--benchmark_filter WriteOne listed: $(cat "$work/out")"
run env SKIFF_BENCH_STORE=sqlite "$store_bench" --benchmark_list_tests
grep -q sqlite "$work/out" && ! grep -q memory "$work/out" && ok "SKIFF_BENCH_STORE sets --store" ||
  fail "SKIFF_BENCH_STORE=sqlite listed: $(cat "$work/out")"

# A filter selects across families: a family it does not match runs nothing
# and says so (5), it is not a failure.
run "$store_bench" --filter store --benchmark_list_tests
[[ $code -eq 0 && $(grep -c . "$work/out") -eq 15 ]] && ok "--filter store selects store_bench" ||
  fail "store_bench --filter store: exit $code, $(grep -c . "$work/out") cases"
run "$kv_bench" --filter store
[[ $code -eq 5 ]] && grep -q 'nothing selected' "$work/err" && ok "--filter store leaves kv_bench out (5)" ||
  fail "kv_bench --filter store: exit $code: $(tail -n 3 "$work/err")"
run "$store_bench" --skip nosuch --benchmark_list_tests
grep -q "names no case" "$work/err" && ok "an unknown --skip name is reported" ||
  fail "--skip nosuch said nothing"
run "$store_bench" --store memory --filter WriteOne --skip BM_WriteOne --benchmark_min_time 0.01
[[ $code -eq 0 ]] && grep -q 'skipped' "$work/out" && ok "a skipped case is shown as skipped" ||
  fail "--skip BM_WriteOne: exit $code: $(cat "$work/out")"

# Live lines: a case's line is out while the family still runs (not held
# back until exit), no line is wider than 100 columns, and the library's
# debug-build warning is not repeated on the console.
coproc LIVE { "$store_bench" --store memory --benchmark_min_time 0.5 2>/dev/null; }
live_pid=$LIVE_PID
if read -r -t 120 first <&"${LIVE[0]}" && kill -0 "$live_pid" 2>/dev/null; then
  ok "the first case's line came while the family still ran ($first)"
else
  fail "no line before the family ended (got '${first:-}')"
fi
cat <&"${LIVE[0]}" >/dev/null
wait "$live_pid" 2>/dev/null
run "$store_bench" --store memory,sqlite --benchmark_min_time 0.01
widest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$work/out" "$work/err")
[[ $widest -le 100 ]] && ok "no console line is wider than 100 columns" ||
  fail "a console line is $widest columns wide"
grep -qi 'built as DEBUG' "$work/out" "$work/err" && fail "the debug-build warning is on the console" ||
  ok "no debug-build warning on the console"

# Tests do not link Google Benchmark (support/ is split by namespace).
if ldd "$build/test/store/store_conformance_test" | grep -q benchmark; then
  fail "a test executable links Google Benchmark"
else
  ok "tests do not link Google Benchmark"
fi

# The JSON: valid with repetitions (the cv of an all-zero counter is NaN),
# written once, with a context that says what ran.
run "$store_bench" --store memory --filter PointRead --benchmark_repetitions 3 \
  --benchmark_min_time 0.01 --benchmark_out "$work/reps.json" --label cli-test
if [[ $code -ne 0 ]]; then
  fail "store_bench with repetitions: exit $code: $(tail -n 5 "$work/err")"
elif node -e '
  const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const c = j.context;
  const bad = [];
  if (c.skiff_stores !== "memory") bad.push(`skiff_stores ${c.skiff_stores}`);
  if (typeof c.skiff_counter_kinds !== "object") bad.push("counter kinds are not an object");
  if (!/^Google Benchmark \d/.test(c.skiff_benchmark_library)) bad.push(`library ${c.skiff_benchmark_library}`);
  if (c.skiff_label !== "cli-test") bad.push("label");
  if (typeof c.skiff_machine?.noisy !== "boolean") bad.push("no machine load");
  if (!j.benchmarks.some((b) => b.aggregate_name === "cv")) bad.push("no cv aggregate");
  if (bad.length) { console.error(bad.join("; ")); process.exit(1); }' "$work/reps.json"; then
  ok "repetitions give valid JSON whose context says what ran"
else
  fail "the JSON of a run with repetitions: see above"
fi
run "$store_bench" --store memory --filter Scan --benchmark_min_time 0.01 --benchmark_format json
node -e 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))' "$work/out" 2>/dev/null &&
  ok "--benchmark_format=json writes JSON on stdout" || fail "--benchmark_format=json: $(head -c 200 "$work/out")"

# ctest's bench commands are fixed: nothing of an earlier run is kept.
command=$(ctest --test-dir "$build" -N -V -R '^store_bench$' 2>/dev/null | sed -n 's/.*Test command: //p' | tr -d '"')
if [[ "$command" == *"/store_bench --profile=quick --benchmark_out="*"/store_bench.json" ]] &&
  ! grep -q '^SKIFF_BENCH_ARGS' "$build/CMakeCache.txt"; then
  ok "ctest's bench commands do not depend on an earlier run"
else
  fail "ctest -L bench runs '$command' (or the cache keeps SKIFF_BENCH_ARGS)"
fi

# Every option of the options table is documented.
"$store_bench" --help | grep -o -- '--[a-z][a-z-]*' | sort -u | while read -r flag; do
  grep -q -- "\`$flag" "$root/docs/benchmarks.md" || echo "$flag"
done >"$work/undocumented"
[[ ! -s "$work/undocumented" ]] && ok "every option is in docs/benchmarks.md" ||
  fail "options missing from docs/benchmarks.md: $(tr '\n' ' ' <"$work/undocumented")"

# A noisy machine is said so, in the console and the JSON: two CPU burners
# (this test's own, bounded, stopped by PID) beside a one-second case.
for _ in $(seq "$(nproc)"); do
  timeout 60 sh -c 'while :; do :; done' &
  burners+=($!)
done
run "$store_bench" --store memory --filter PointRead --benchmark_min_time 1 \
  --benchmark_out "$work/noisy.json"
for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null; done
burners=()
if grep -q 'noisy' "$work/out" && grep -q 'warning: noisy machine' "$work/err" &&
  node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    process.exit(j.context.skiff_machine.noisy && j.benchmarks[0].other_cpu_pct > 25 ? 0 : 1)' \
    "$work/noisy.json"; then
  ok "a busy machine is reported in the console and the JSON"
else
  fail "no noise reported beside two CPU burners: $(cat "$work/out") $(tail -n 2 "$work/err")"
fi

# The README's quick start: a user with read and write, then `skiff call`
# against a real skiffd (ours, on a free port, stopped by PID).
skiff=$build/src/cmd/skiff skiffd=$build/src/cmd/skiffd
secret=$("$skiff" --store="sqlite:$work/quick.db" user add alice --read '*' --write '*' 2>/dev/null)
"$skiff" --store "sqlite:$work/quick.db" user add nobody >/dev/null 2>&1
"$skiffd" --store "sqlite:$work/quick.db" --port 0 >"$work/skiffd.out" 2>&1 &
skiffd_pid=$!
burners+=("$skiffd_pid")  # stopped at exit whatever happens
for _ in $(seq 100); do grep -q 'listening on' "$work/skiffd.out" && break; sleep 0.1; done
port=$(sed -n 's/^skiffd listening on [^ ]*:\([0-9]*\).*/\1/p' "$work/skiffd.out")
export SKIFF_URL=ws://127.0.0.1:$port
run env SKIFF_USER=alice SKIFF_SECRET="$secret" "$skiff" call set table=notes key=a value='{"text":"hi"}'
run env SKIFF_USER=alice SKIFF_SECRET="$secret" "$skiff" call get table=notes key=a
[[ $code -eq 0 ]] && grep -q '"value":{"text":"hi"}' "$work/out" &&
  ok "skiff call set and get with the quick start's user" || fail "skiff call get: exit $code: $(cat "$work/out" "$work/err")"
run "$skiff" call get table=notes key=a --user alice --secret 00
[[ $code -eq 1 ]] && grep -q unauthorized "$work/err" && ok "a wrong secret is refused (1)" ||
  fail "a wrong secret gave exit $code"
run "$skiff" call get table=notes key=a --url ws://127.0.0.1:1
[[ $code -eq 6 ]] && ok "an unreachable server is 6" || fail "an unreachable server gave exit $code"
kill "$skiffd_pid" 2>/dev/null
unset SKIFF_URL

# A bench executable started by hand stops the PostgreSQL it started.
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  state=$work/pg-run
  run env -u SKIFF_TEST_POSTGRES_URL SKIFF_PG_STATE="$state" "$store_bench" --store postgres \
    --filter WriteOne --benchmark_min_time 0.01 --benchmark_out "$work/pg.json"
  if [[ $code -ne 0 ]]; then
    fail "store_bench on postgres: exit $code: $(tail -n 5 "$work/err")"
  elif [[ -e "$state" ]] || pgrep -f -- "-D $state/data" >/dev/null; then
    fail "store_bench left PostgreSQL running in $state"
    pid=$(head -n 1 "$state/data/postmaster.pid" 2>/dev/null) && kill "$pid" 2>/dev/null
  elif ! node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      const ran = j.benchmarks.some((b) => !b.error_occurred);
      process.exit(ran && /^\d+/.test(j.context.skiff_postgres_version) ? 0 : 1)' "$work/pg.json"; then
    fail "the PostgreSQL case did not run, or its JSON names no PostgreSQL version: $(tail -n 5 "$work/err")"
  else
    ok "a run by hand started PostgreSQL, named its version and stopped it"
  fi
elif [[ "${CI:-}" == true ]]; then
  fail "no PostgreSQL binaries under CI"
else
  echo "cli_test: *** skipped the PostgreSQL check: no PostgreSQL binaries ***"
fi

if ((failures > 0)); then
  echo "cli_test: $failures check(s) FAILED" >&2
  exit 1
fi
echo "cli_test: PASS"

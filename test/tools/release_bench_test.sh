#!/usr/bin/env bash
# The release workflow's choices, checked without GitHub: which tag
# tools/release-bench compares with, which tags start the workflow, which
# cases the PostgreSQL job runs, and how many rounds fit a time budget.
#
#   release_bench_test.sh REPO_ROOT
set -euo pipefail
root=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "release_bench_test: FAILED: $*" >&2; exit 1; }
check() {  # want got what
  [[ "$1" == "$2" ]] || fail "$3: expected '$1', got '$2'"
  echo "release_bench_test: ok: $3 = $2"
}

# A repository with a release history and a copy of the script, so that
# the script's own repository is this one.
repo=$work/repo
mkdir -p "$repo/tools/lib"
cp "$root/tools/release-bench" "$repo/tools/"
cp "$root/tools/lib/release.sh" "$repo/tools/lib/"
git -C "$repo" init -q
git -C "$repo" config user.email t@example.invalid
git -C "$repo" config user.name t
commit() { echo "$1" >"$repo/f"; git -C "$repo" add -A; git -C "$repo" commit -qm "$1"; }
commit one && git -C "$repo" tag v0.1.0
commit two && git -C "$repo" tag v0.2.0-rc1
commit three && git -C "$repo" tag v0.2.0
commit four && git -C "$repo" tag v0.10.0-rc1
commit five && git -C "$repo" tag v0.10.0
commit six

base() { "$repo/tools/release-bench" --print-base auto "$1" 2>/dev/null; }
check v0.1.0 "$(base v0.2.0)" "base of v0.2.0 (not the release candidate v0.2.0-rc1)"
check v0.1.0 "$(base v0.2.0-rc1)" "base of v0.2.0-rc1"
check v0.2.0 "$(base v0.10.0)" "base of v0.10.0 (versions compare as numbers)"
check v0.10.0 "$(base HEAD)" "base of a commit after v0.10.0"
check none "$(base v0.1.0)" "base of the first release"
check v0.2.0 "$("$repo/tools/release-bench" --print-base v0.2.0 HEAD 2>/dev/null)" "an explicit base"

source "$root/tools/lib/release.sh"
check 3 "$(fit_rounds 1 600 3600 3)" "rounds when two more fit"
check 2 "$(fit_rounds 1 600 700 3)" "rounds when one more fits"
check 1 "$(fit_rounds 1 600 100 3)" "rounds when none more fits"
check 1 "$(fit_rounds 1 600 0 5)" "rounds with the budget spent"
check 5 "$(fit_rounds 2 10 100000 5)" "never more rounds than asked"

# The workflow's tag filter, as GitHub reads it ('+' repeats, '.' literal).
workflow=$root/.github/workflows/bench.yml
pattern=$(sed -n 's/^    tags: \["\(.*\)"\]$/\1/p' "$workflow")
[[ -n "$pattern" ]] || fail "no tag filter in $workflow"
regex="^$(sed 's/\./\\./g' <<<"$pattern")\$"
for tag in v0.2.0 v1.10.3; do
  grep -Eq "$regex" <<<"$tag" || fail "the workflow does not start on $tag ($pattern)"
done
for tag in v0.2.0-rc1 v1.0.0-beta.2 v1.0; do
  if grep -Eq "$regex" <<<"$tag"; then fail "the workflow starts on $tag ($pattern)"; fi
done
echo "release_bench_test: ok: the workflow starts on final releases only ($pattern)"
jobs_guarded=$(grep -c "if: github.event_name == 'workflow_dispatch' || !contains(github.ref_name, '-')" "$workflow")
check 2 "$jobs_guarded" "jobs that skip pre-release tags"

# The PostgreSQL job's filter selects the cases that name postgres as a
# segment, cluster mode's family, and nothing else.
filter=$(grep -o -- "--filter '[^']*'" "$workflow" | sed "s/--filter '\(.*\)'/\1/")
[[ -n "$filter" ]] || fail "the PostgreSQL job has no --filter"
for name in BM_WriteOne/postgres/real_time get-hot/sequential/postgres/commit BM_PushOne/postgres; do
  grep -Eq -- "$filter" <<<"$name" || fail "the PostgreSQL job leaves out $name"
done
for name in BM_WriteOne/sqlite/real_time BM_MemoryTimeline/sqlite/policy:none BM_Pack/kind:0 \
  get-hot/sequential/memory/commit; do
  if grep -Eq -- "$filter" <<<"$name"; then fail "the PostgreSQL job runs $name"; fi
done
# Cluster mode's family names no store in its cases: the filter selects it
# by its family name (the suite's --filter matches family names first).
grep -Eq -- "$filter" <<<"cluster_bench" || fail "the PostgreSQL job leaves out cluster_bench"
for family in store_bench kv_bench memory_bench; do
  if grep -Eq -- "$filter" <<<"$family"; then fail "the PostgreSQL job runs all of $family"; fi
done
echo "release_bench_test: ok: the PostgreSQL job runs only cases on postgres and cluster_bench ($filter)"
grep -q -- '--budget-minutes "$BUDGET_MINUTES"' "$workflow" || fail "a job runs without a time budget"
echo "release_bench_test: PASS"

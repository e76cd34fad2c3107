# Functions of tools/release-bench (and tools/drill) that tests call on their
# own (test/tools/release_bench_test.sh): which tag is the base, how many
# rounds fit the time left, and how a tree is built for measuring. Sourced;
# defines functions only.

# The previous final release of commit $2 in repository $1: the newest tag
# vMAJOR.MINOR.PATCH (no pre-release suffix such as -rc1) reachable from it
# that does not point at it. Prints nothing when there is none.
previous_release() {
  local repo=$1 head=$2
  git -C "$repo" tag --list 'v*' --merged "$head" |
    grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' |
    grep -vxF -f <(git -C "$repo" tag --points-at "$head"; echo) |
    sort -V | tail -n 1 || true
}

# True when tag $1 is a final release (vMAJOR.MINOR.PATCH).
is_final_release() { [[ "$1" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]]; }

# How many rounds to run in all, given that $1 rounds are done, a round
# takes $2 seconds, $3 seconds are left of the budget and $4 rounds were
# asked for: as many as fit, never fewer than those done, never more than
# asked.
fit_rounds() {
  local done=$1 round=$2 left=$3 wanted=$4
  local more=$wanted
  if ((round > 0)); then more=$((done + left / round)); fi
  ((more > wanted)) && more=$wanted
  ((more < done)) && more=$done
  echo "$more"
}

# Configures and builds source tree $1 into $1/build as the release
# comparison measures it (Release, benchmarks, no tests), with $2 jobs,
# logging to $3. Incremental when $1/build exists. Fails when either fails.
build_tree() {
  local src=$1 jobs=$2 log=$3
  cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DSKIFF_BUILD_TESTS=OFF -DSKIFF_BUILD_BENCH=ON -DSKIFF_CHECK_HEADERS=OFF >"$log" 2>&1 &&
    cmake --build "$src/build" -j "$jobs" >>"$log" 2>&1
}

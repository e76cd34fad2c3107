// JsRunner: a JavaScript driver (Node, Bun, or Node steering headless
// Chromium) run as a child process for one benchmark case, and the one JSON
// object of figures it prints.
//
// The contract with a driver (bench/js/*.mjs): it takes its work as
// arguments, writes progress and diagnostics on stderr (passed through to
// this process's stderr), and prints its result as one line on stdout, a
// JSON object, before it exits with status 0. Any other stdout line goes to
// `on_line` as it arrives: a driver says "measure start" and "measure end"
// there, so the family samples the server's CPU over the measured part
// only. A driver that cannot do its
// work prints {"error": "..."} and exits non-zero. Time is bounded: a driver
// still running at the deadline is killed (only the pid started here).
//
// Also where the suite looks for the JavaScript runtimes and the built
// TypeScript package, so that a family can skip a case whose runtime is
// missing with the reason (connections_bench does the same for its peers).
//
// Thread-compatible: free functions, no shared state.
#ifndef SKIFF_SUPPORT_JS_RUNNER_H_
#define SKIFF_SUPPORT_JS_RUNNER_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace skiff::bench {

// Runs `argv` (argv[0] a path) with this environment plus `env` and returns
// the object of its last stdout line that parses as one. unavailable when it
// cannot start, prints no object, exits non-zero (with the driver's "error"
// member, or its last line, in the message) or runs past `timeout`.
Result<nlohmann::json> RunJsDriver(const std::vector<std::string>& argv,
                                   const std::vector<std::string>& env,
                                   std::chrono::milliseconds timeout,
                                   const std::function<void(const std::string&)>& on_line = {});

// Where each runtime is: /usr/bin/node (or SKIFF_BENCH_NODE); --bun, else
// bench/peers' npm copy; /usr/bin/chromium (or SKIFF_BENCH_CHROMIUM).
std::string NodePath();
std::string BunPath();
std::string ChromiumPath();

// The source tree's folders the drivers need.
std::string SourcePath(const std::string& relative);

// Why `runtime` ("node", "bun", "chromium") cannot run a driver here, or
// empty: the runtime itself, and the built package it loads
// (src/js/dist/<entry>, built with `npx tsc -p src/js/tsconfig.json`).
std::string JsMissing(const std::string& runtime, const std::string& dist_entry);

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_JS_RUNNER_H_

#include "compare/run.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "compare/json_text.h"

namespace skiff::compare {
namespace {

using nlohmann::json;

// Numeric keys Google Benchmark writes for its own bookkeeping; every other
// numeric key of a row is a user counter.
constexpr std::array<std::string_view, 12> kReservedKeys = {
    "family_index",
    "per_family_instance_index",
    "repetitions",
    "repetition_index",
    "threads",
    "iterations",
    "real_time",
    "cpu_time",
    "big_o",
    "rms",
    "real_coefficient",
    "cpu_coefficient",
};

constexpr std::array<CounterKind, 4> kAllKinds = {CounterKind::kInfo, CounterKind::kDeterministic,
                                                  CounterKind::kJudgedLower,
                                                  CounterKind::kJudgedHigher};

bool IsReserved(std::string_view key) {
  return std::find(kReservedKeys.begin(), kReservedKeys.end(), key) != kReservedKeys.end();
}

bool StartsWithSkipped(std::string_view message) {
  constexpr std::string_view kWord = "skipped";
  if (message.size() < kWord.size()) return false;
  for (size_t i = 0; i < kWord.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(message[i])) != kWord[i]) return false;
  }
  return true;
}

// Rows of one run_name, before deciding whether iteration or aggregate rows
// provide the samples.
struct Pending {
  BenchmarkResult result;
  std::vector<const json*> iterations;
  std::vector<const json*> medians;
  std::vector<const json*> means;
};

Status RowError(std::string_view label, size_t index, std::string_view what) {
  return BadRequest(std::string(label) + ": benchmarks[" + std::to_string(index) + "] " +
                    std::string(what));
}

// Reads an optional string member; an error when present with another type.
Status OptionalString(const json& row, const char* key, std::string* out, std::string_view label,
                      size_t index) {
  auto it = row.find(key);
  if (it == row.end()) return Status::Ok();
  if (!it->is_string())
    return RowError(label, index, std::string("\"") + key + "\" is not a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status ParseKinds(const json& context, std::string_view label, Run* run) {
  auto it = context.find("skiff_counter_kinds");
  if (it == context.end()) return Status::Ok();
  json kinds;
  if (it->is_string()) {
    // AddCustomContext only stores strings, so the suite writes the object as
    // JSON text.
    const std::string& text = it->get_ref<const std::string&>();
    if (MaxNesting(text) > kMaxRunNesting) {
      return BadRequest(std::string(label) + ": context.skiff_counter_kinds nests too deep");
    }
    kinds = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (kinds.is_discarded()) {
      return BadRequest(std::string(label) + ": context.skiff_counter_kinds is not valid JSON");
    }
  } else {
    kinds = *it;
  }
  if (!kinds.is_object()) {
    return BadRequest(std::string(label) + ": context.skiff_counter_kinds is not an object");
  }
  for (const auto& [name, kind] : kinds.items()) {
    bool known = false;
    for (CounterKind k : kAllKinds) {
      if (kind.is_string() && kind.get<std::string>() == CounterKindName(k)) {
        run->counter_kinds[name] = k;
        known = true;
      }
    }
    if (!known) {
      return BadRequest(std::string(label) + ": counter \"" + name +
                        "\" has a kind other than \"deterministic\", \"judged_lower\", "
                        "\"judged_higher\" or \"info\"");
    }
  }
  return Status::Ok();
}

// Validates one row and files it under its run_name.
Status AddRow(const json& row, size_t index, std::string_view label,
              std::map<std::string, size_t>* by_name, std::vector<Pending>* pending) {
  if (!row.is_object()) return RowError(label, index, "is not an object");
  std::string name;
  auto name_it = row.find("name");
  if (name_it == row.end() || !name_it->is_string()) {
    return RowError(label, index, "has no string \"name\"");
  }
  name = name_it->get<std::string>();
  std::string run_name = name;
  std::string run_type = "iteration";
  std::string aggregate_name;
  std::string time_unit = "ns";
  std::string error_message;
  SKIFF_RETURN_IF_ERROR(OptionalString(row, "run_name", &run_name, label, index));
  SKIFF_RETURN_IF_ERROR(OptionalString(row, "run_type", &run_type, label, index));
  SKIFF_RETURN_IF_ERROR(OptionalString(row, "aggregate_name", &aggregate_name, label, index));
  SKIFF_RETURN_IF_ERROR(OptionalString(row, "time_unit", &time_unit, label, index));
  SKIFF_RETURN_IF_ERROR(OptionalString(row, "error_message", &error_message, label, index));
  if (run_type != "iteration" && run_type != "aggregate") {
    return RowError(label, index, "has run_type \"" + run_type + "\"");
  }
  if (NanosPerUnit(time_unit) == 0) {
    return RowError(label, index, "has unknown time_unit \"" + time_unit + "\"");
  }
  bool errored = false;
  if (auto it = row.find("error_occurred"); it != row.end()) {
    if (!it->is_boolean()) return RowError(label, index, "\"error_occurred\" is not a boolean");
    errored = it->get<bool>();
  }
  // Only rows that can become samples need their times; a stddev or cv
  // aggregate may hold null where the library printed NaN.
  const bool sample_row = !errored && (run_type == "iteration" || aggregate_name == "median" ||
                                       aggregate_name == "mean");
  for (const char* key : {"real_time", "cpu_time"}) {
    auto it = row.find(key);
    if (it == row.end()) {
      if (sample_row) return RowError(label, index, std::string("has no \"") + key + "\"");
    } else if (!it->is_number() && (sample_row || !it->is_null())) {
      return RowError(label, index, std::string("\"") + key + "\" is not a number");
    }
  }
  for (const char* key : {"repetitions", "repetition_index", "iterations", "threads"}) {
    auto it = row.find(key);
    if (it != row.end() && !it->is_number()) {
      return RowError(label, index, std::string("\"") + key + "\" is not a number");
    }
  }

  auto [slot, inserted] = by_name->try_emplace(run_name, pending->size());
  if (inserted) {
    pending->emplace_back();
    pending->back().result.name = run_name;
    pending->back().result.time_unit = time_unit;
    // Shown, never judged: a label that is not a string is left out.
    if (auto it = row.find("label"); it != row.end() && it->is_string()) {
      pending->back().result.label = it->get<std::string>();
    }
  }
  Pending& p = (*pending)[slot->second];
  if (errored) {
    RunState state = StartsWithSkipped(error_message) ? RunState::kSkipped : RunState::kErrored;
    // An error in any repetition makes the benchmark errored; a skip only
    // counts when nothing errored.
    if (p.result.state != RunState::kErrored) {
      if (p.result.state == RunState::kOk || state == RunState::kErrored) {
        p.result.state = state;
        p.result.error_message = error_message;
      }
    }
    return Status::Ok();
  }
  if (run_type == "iteration") {
    p.iterations.push_back(&row);
  } else if (aggregate_name == "median") {
    p.medians.push_back(&row);
  } else if (aggregate_name == "mean") {
    p.means.push_back(&row);
  }
  return Status::Ok();
}

void AddSamples(const std::vector<const json*>& rows, BenchmarkResult* out) {
  for (const json* row : rows) {
    double scale = NanosPerUnit(row->value("time_unit", std::string("ns")));
    out->real_ns.push_back(row->at("real_time").get<double>() * scale);
    out->cpu_ns.push_back(row->at("cpu_time").get<double>() * scale);
    if (auto rate = row->find("items_per_second");
        rate != row->end() && rate->is_number() && rate->get<double>() > 0) {
      out->per_item_ns.push_back(1e9 / rate->get<double>());
    }
    for (const auto& [key, value] : row->items()) {
      if (value.is_number() && !IsReserved(key)) out->counters[key].push_back(value.get<double>());
    }
  }
  // A rate that some samples lack is no basis for a judgement.
  if (out->per_item_ns.size() != out->real_ns.size()) out->per_item_ns.clear();
}

}  // namespace

std::string_view CounterKindName(CounterKind kind) {
  switch (kind) {
    case CounterKind::kInfo:
      return "info";
    case CounterKind::kDeterministic:
      return "deterministic";
    case CounterKind::kJudgedLower:
      return "judged_lower";
    case CounterKind::kJudgedHigher:
      return "judged_higher";
  }
  return "info";
}

const BenchmarkResult* Run::Find(std::string_view name) const {
  for (const auto& b : benchmarks) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

double NanosPerUnit(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  return 0;
}

Result<Run> ParseRun(std::string_view text, std::string_view label) {
  if (MaxNesting(text) > kMaxRunNesting) {
    return BadRequest(std::string(label) + ": JSON nests deeper than " +
                      std::to_string(kMaxRunNesting) + " levels; not a benchmark run");
  }
  json root;
  try {
    root = json::parse(NullNonFiniteNumbers(text));
  } catch (const json::exception& e) {
    return BadRequest(std::string(label) + ": malformed JSON (" + e.what() + ")");
  }
  if (!root.is_object()) return BadRequest(std::string(label) + ": top level is not an object");
  Run run;
  if (auto it = root.find("context"); it != root.end()) {
    if (!it->is_object()) return BadRequest(std::string(label) + ": \"context\" is not an object");
    SKIFF_RETURN_IF_ERROR(ParseKinds(*it, label, &run));
    // Invalid UTF-8 in a host name must not make the report unprintable.
    run.context = it->dump(-1, ' ', false, json::error_handler_t::replace);
  }
  auto benchmarks = root.find("benchmarks");
  if (benchmarks == root.end() || !benchmarks->is_array()) {
    return BadRequest(std::string(label) + ": no \"benchmarks\" array");
  }
  std::map<std::string, size_t> by_name;
  std::vector<Pending> pending;
  for (size_t i = 0; i < benchmarks->size(); ++i) {
    SKIFF_RETURN_IF_ERROR(AddRow((*benchmarks)[i], i, label, &by_name, &pending));
  }
  for (Pending& p : pending) {
    if (p.result.state == RunState::kOk) {
      // Per-repetition rows are the real samples; aggregates stand in only
      // when the run was made with --benchmark_report_aggregates_only.
      if (!p.iterations.empty()) {
        AddSamples(p.iterations, &p.result);
      } else {
        p.result.from_aggregates = true;
        AddSamples(p.medians.empty() ? p.means : p.medians, &p.result);
      }
    }
    run.benchmarks.push_back(std::move(p.result));
  }
  return run;
}

Result<Run> LoadRun(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return BadRequest(path + ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadRequest(path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return BadRequest(path + ": read failed");
  return ParseRun(text.str(), path);
}

}  // namespace skiff::compare

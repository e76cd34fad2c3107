#include "compare/merge.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "compare/json_text.h"

namespace skiff::compare {
namespace {

using nlohmann::json;

bool IsAggregate(const json& row) {
  auto it = row.find("run_type");
  return it != row.end() && *it == "aggregate";
}

std::string RunName(const json& row) {
  for (const char* key : {"run_name", "name"}) {
    auto it = row.find(key);
    if (it != row.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

// A disagreement between inputs keeps the kind that judges more:
// deterministic over judged over info.
int Strictness(const json& kind) {
  if (kind == "deterministic") return 2;
  if (kind == "judged_lower" || kind == "judged_higher") return 1;
  return 0;
}

// Adds one input's declared counter kinds to `kinds`.
Status UniteKinds(const json& context, const std::string& label, json* kinds) {
  auto it = context.find("skiff_counter_kinds");
  if (it == context.end()) return Status::Ok();
  if (it->is_string() && MaxNesting(it->get_ref<const std::string&>()) > kMaxRunNesting) {
    return BadRequest(label + ": context.skiff_counter_kinds nests too deep");
  }
  json declared = it->is_string() ? json::parse(it->get<std::string>(), nullptr, false) : *it;
  if (!declared.is_object()) {
    return BadRequest(label + ": context.skiff_counter_kinds is not a JSON object");
  }
  for (const auto& [name, kind] : declared.items()) {
    if (!kind.is_string())
      return BadRequest(label + ": counter kind of " + name + " is not a string");
    if (!kinds->contains(name) || Strictness(kind) > Strictness((*kinds)[name])) {
      (*kinds)[name] = kind;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> MergeRuns(const std::vector<MergeInput>& inputs) {
  if (inputs.empty()) return BadRequest("nothing to merge");
  std::vector<json> docs;
  json kinds = json::object();
  for (const MergeInput& in : inputs) {
    if (MaxNesting(in.text) > kMaxRunNesting) {
      return BadRequest(in.label + ": JSON nests deeper than " + std::to_string(kMaxRunNesting) +
                        " levels; not a benchmark run");
    }
    json doc = json::parse(NullNonFiniteNumbers(in.text), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return BadRequest(in.label + ": malformed JSON");
    if (!doc.is_object()) return BadRequest(in.label + ": top level is not an object");
    auto benchmarks = doc.find("benchmarks");
    if (benchmarks == doc.end() || !benchmarks->is_array()) {
      return BadRequest(in.label + ": no \"benchmarks\" array");
    }
    for (const json& row : *benchmarks) {
      if (!row.is_object()) return BadRequest(in.label + ": a benchmark row is not an object");
    }
    if (auto context = doc.find("context"); context != doc.end()) {
      if (!context->is_object()) return BadRequest(in.label + ": \"context\" is not an object");
      SKIFF_RETURN_IF_ERROR(UniteKinds(*context, in.label, &kinds));
    }
    docs.push_back(std::move(doc));
  }

  std::set<std::string> with_iterations;
  for (const json& doc : docs) {
    for (const json& row : doc["benchmarks"]) {
      if (!IsAggregate(row)) with_iterations.insert(RunName(row));
    }
  }
  json rows = json::array();
  std::map<std::string, int> count;
  for (const json& doc : docs) {
    for (const json& row : doc["benchmarks"]) {
      const std::string name = RunName(row);
      if (IsAggregate(row) && with_iterations.count(name) > 0) continue;
      rows.push_back(row);
      if (!IsAggregate(row)) rows.back()["repetition_index"] = count[name]++;
    }
  }
  for (json& row : rows) {
    if (!IsAggregate(row)) row["repetitions"] = count[RunName(row)];
  }

  json merged;
  merged["context"] = docs.front().value("context", json::object());
  if (!kinds.empty()) merged["context"]["skiff_counter_kinds"] = kinds;
  merged["context"]["skiff_merged_inputs"] = static_cast<int>(docs.size());
  merged["benchmarks"] = std::move(rows);
  return merged.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace skiff::compare

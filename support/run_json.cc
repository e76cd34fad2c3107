#include "support/run_json.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

namespace skiff::bench {
namespace {

using json = nlohmann::ordered_json;

double Round1(double v) { return std::round(v * 10) / 10; }

}  // namespace

std::vector<std::string> StoresOfCases(const std::vector<std::string>& names) {
  std::set<std::string> stores;
  for (const std::string& name : names) {
    size_t at = 0;
    while (at <= name.size()) {
      const size_t end = std::min(name.find('/', at), name.size());
      const std::string segment = name.substr(at, end - at);
      if (segment == "memory" || segment == "sqlite" || segment == "postgres") {
        stores.insert(segment);
      }
      at = end + 1;
    }
  }
  return {stores.begin(), stores.end()};
}

Status AddSuiteContext(json& document, const RunSummary& s) {
  if (!document.is_object() || !document.contains("context") || !document["context"].is_object() ||
      !document.contains("benchmarks") || !document["benchmarks"].is_array()) {
    return BadRequest("not a Google Benchmark JSON document");
  }
  json& context = document["context"];
  for (const auto& [key, value] : s.context) context[key] = value;
  json kinds = json::object();
  for (const auto& [name, kind] : s.counter_kinds) kinds[name] = kind;
  // A counter the suite adds below is declared like any other.
  if (!s.other_cpu_pct.empty()) kinds["other_cpu_pct"] = "info";
  context["skiff_counter_kinds"] = std::move(kinds);
  std::string stores;
  for (const std::string& kind : StoresOfCases(s.ran)) stores += (stores.empty() ? "" : ",") + kind;
  context["skiff_stores"] = stores.empty() ? "none" : stores;
  context["skiff_cases_run"] = s.ran.size();

  const double others = support::OtherCpuPercent(s.start, s.end);
  json machine = {{"loadavg_start", s.start.loadavg}, {"loadavg_end", s.end.loadavg}};
  machine["other_cpu_pct"] = others >= 0 ? json(Round1(others)) : json(nullptr);
  std::vector<std::string> noisy;
  for (const auto& [name, pct] : s.other_cpu_pct) {
    if (pct > support::kNoisyOtherCpuPercent) noisy.push_back(name);
  }
  machine["noisy"] = others > support::kNoisyOtherCpuPercent || !noisy.empty();
  machine["noisy_cases"] = noisy;
  machine["noisy_above_pct"] = support::kNoisyOtherCpuPercent;
  context["skiff_machine"] = std::move(machine);

  for (json& row : document["benchmarks"]) {
    if (!row.is_object()) continue;
    const std::string name = row.value("run_name", row.value("name", std::string()));
    if (auto it = s.other_cpu_pct.find(name); it != s.other_cpu_pct.end()) {
      row["other_cpu_pct"] = Round1(it->second);
    }
  }
  return Status::Ok();
}

Result<json> ParseBenchmarkJson(const std::string& text) {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return BadRequest("Google Benchmark wrote text that is not JSON");
  return document;
}

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return Internal("cannot write " + temp);
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) return Internal("cannot rename " + temp + " to " + path + ": " + ec.message());
  return Status::Ok();
}

}  // namespace skiff::bench

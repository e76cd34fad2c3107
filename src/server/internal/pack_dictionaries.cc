#include "server/internal/pack_dictionaries.h"

#include <utility>

namespace skiff::server::internal {

const doc::PackDictionary* PackDictionaries::ForPacking(std::string_view table,
                                                        std::string_view json) {
  MutexLock lock(&mu_);
  auto it = tables_.find(table);
  if (it == tables_.end()) it = tables_.emplace(std::string(table), Table()).first;
  Table& t = it->second;
  if (t.dictionary != nullptr || t.sampled) return t.dictionary;
  if (json.size() <= kMaxSampleDocumentBytes && sample_bytes_ + json.size() <= kMaxSampleBytes) {
    t.samples.emplace_back(json);
    sample_bytes_ += json.size();
    if (t.samples.size() == kSamples) {
      t.sampled = true;
      ++ready_;
    }
  }
  return nullptr;
}

bool PackDictionaries::TrainReady() {
  struct Job {
    Table* table;
    uint32_t id;
    std::vector<std::string> samples;
  };
  std::vector<Job> jobs;
  {
    MutexLock lock(&mu_);
    if (ready_ == 0) return false;
    ready_ = 0;
    for (auto& [name, t] : tables_) {
      if (!t.sampled || t.samples.empty()) continue;
      for (const std::string& s : t.samples) sample_bytes_ -= s.size();
      // The id is taken now and filled in below; no packed bytes name it
      // before then.
      by_id_.emplace_back();
      jobs.push_back({&t, static_cast<uint32_t>(by_id_.size()), std::move(t.samples)});
      t.samples = {};
    }
  }
  // Tables are never erased, and their nodes do not move.
  for (Job& job : jobs) {
    Result<std::shared_ptr<const doc::PackDictionary>> trained =
        job.id <= doc::PackDictionary::kMaxId ? doc::PackDictionary::Train(job.samples, job.id)
                                              : Unavailable("no dictionary ids left");
    if (!trained.ok()) continue;  // the table packs without one
    MutexLock lock(&mu_);
    by_id_[job.id - 1] = std::move(*trained);
    job.table->dictionary = by_id_[job.id - 1].get();
  }
  return !jobs.empty();
}

const doc::PackDictionary* PackDictionaries::ById(uint32_t id) const {
  MutexLock lock(&mu_);
  return id >= 1 && id <= by_id_.size() ? by_id_[id - 1].get() : nullptr;
}

}  // namespace skiff::server::internal

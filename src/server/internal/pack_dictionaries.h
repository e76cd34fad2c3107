// PackDictionaries: the server's zstd dictionaries for packed text
// (doc/pack_dictionary.h), one per table, each trained from the first
// documents of its table that sweeps pack.
//
// A table's documents are packed without a dictionary until a sweep has
// packed kSamples of them; their texts, kept meanwhile (at most
// kMaxSampleBytes across all tables), train the table's dictionary, and
// documents packed from then on use it. A dictionary is never dropped while
// the server runs, since packed bytes name it; a table whose samples teach
// zstd nothing keeps packing without one. Only a table with that many
// documents gets a dictionary, so its ~110 KB (the dictionary and zstd's
// tables) is repaid many times over.
//
// Thread-safe: one mutex guards everything; lookups by id come from any
// thread, the rest from the sweeper.
#ifndef SKIFF_SERVER_INTERNAL_PACK_DICTIONARIES_H_
#define SKIFF_SERVER_INTERNAL_PACK_DICTIONARIES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "doc/pack_dictionary.h"

namespace skiff::server::internal {

class PackDictionaries {
 public:
  static constexpr size_t kSamples = 1000;
  static constexpr size_t kMaxSampleBytes = 4 << 20;
  static constexpr size_t kMaxSampleDocumentBytes = 16 << 10;

  // The dictionary to pack a document of `table` with; null while the
  // table has none. If it has none and still needs samples, keeps a copy of
  // `json` as one. The pointer stays valid as long as this object.
  const doc::PackDictionary* ForPacking(std::string_view table, std::string_view json);

  // Trains the dictionary of every table with kSamples samples, and frees
  // their samples. Slow (tens of milliseconds a table), so it trains without
  // the lock, and the caller must hold no shard lock. One caller at a time.
  // Returns whether it trained any.
  bool TrainReady();

  // The dictionary named `id`; null when there is none.
  const doc::PackDictionary* ById(uint32_t id) const;

 private:
  struct Table {
    const doc::PackDictionary* dictionary = nullptr;
    // Its samples are being trained on, or taught zstd nothing: it takes
    // no more.
    bool sampled = false;
    std::vector<std::string> samples;
  };

  mutable Mutex mu_;
  // A std::map: TrainReady keeps pointers to tables across the lock.
  std::map<std::string, Table, std::less<>> tables_ SKIFF_GUARDED_BY(mu_);
  // By id - 1: the dictionaries themselves, shared by the tables' entries.
  std::vector<std::shared_ptr<const doc::PackDictionary>> by_id_ SKIFF_GUARDED_BY(mu_);
  size_t sample_bytes_ SKIFF_GUARDED_BY(mu_) = 0;
  size_t ready_ SKIFF_GUARDED_BY(mu_) = 0;  // tables with kSamples samples
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_PACK_DICTIONARIES_H_

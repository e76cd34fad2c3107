// PackDictionary: a zstd dictionary trained on documents of one table, for
// PackText. A ~1 KB document alone gives zstd too little to learn from (it
// shrinks to about 60 %); one dictionary holding what a table's documents
// share (member names, common values, their shapes) takes the same
// document to about a third, for one dictionary of at most 16 KB (plus
// zstd's digested tables) per table.
//
// Immutable once trained and shared through shared_ptr: packed bytes name
// their dictionary by id and need it, alive, to be unpacked. Thread-safe.
#ifndef SKIFF_DOC_PACK_DICTIONARY_H_
#define SKIFF_DOC_PACK_DICTIONARY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

struct ZSTD_CDict_s;
struct ZSTD_DDict_s;

namespace skiff::doc {

class PackDictionary {
 public:
  // Ids 1..kMaxId fit the two bytes packed text gives them.
  static constexpr uint32_t kMaxId = 0xFFFF;

  // Trains a dictionary named `id` (1..kMaxId) from sample documents' JSON
  // text. unavailable when zstd finds too little to learn (too few or too
  // small samples; a few hundred documents are enough).
  static Result<std::shared_ptr<const PackDictionary>> Train(
      const std::vector<std::string>& samples, uint32_t id);

  ~PackDictionary();
  PackDictionary(const PackDictionary&) = delete;
  PackDictionary& operator=(const PackDictionary&) = delete;

  uint32_t id() const { return id_; }
  size_t bytes() const { return bytes_; }  // the dictionary's own size
  ZSTD_CDict_s* compress() const { return compress_; }
  ZSTD_DDict_s* decompress() const { return decompress_; }

 private:
  PackDictionary(uint32_t id, const std::string& dictionary);

  const uint32_t id_;
  const size_t bytes_;
  ZSTD_CDict_s* const compress_;
  ZSTD_DDict_s* const decompress_;
};

}  // namespace skiff::doc

#endif  // SKIFF_DOC_PACK_DICTIONARY_H_

#include "doc/pack_dictionary.h"

#include <numeric>

#include <zdict.h>
#include <zstd.h>

namespace skiff::doc {
namespace {

// 16 KB: what docs/memory-tiers.md measured (a 1 KB guild to about 300
// bytes); larger dictionaries gain little on ~1 KB documents.
constexpr size_t kDictionaryCapacity = 16 * 1024;

// zstd's digested dictionary takes 64 KB at level 1 and 424 KB at level 3
// (its tables grow with the level), and a table keeps it for as long as it
// lives. On ~1 KB documents the dictionary, not the level, does the work.
constexpr int kLevel = 1;

}  // namespace

Result<std::shared_ptr<const PackDictionary>> PackDictionary::Train(
    const std::vector<std::string>& samples, uint32_t id) {
  SKIFF_CHECK(id >= 1 && id <= kMaxId);
  std::string joined;
  std::vector<size_t> sizes;
  sizes.reserve(samples.size());
  joined.reserve(std::accumulate(samples.begin(), samples.end(), size_t{0},
                                 [](size_t n, const std::string& s) { return n + s.size(); }));
  for (const std::string& s : samples) {
    joined += s;
    sizes.push_back(s.size());
  }
  std::string dictionary(kDictionaryCapacity, '\0');
  const size_t n = ZDICT_trainFromBuffer(dictionary.data(), dictionary.size(), joined.data(),
                                         sizes.data(), static_cast<unsigned>(sizes.size()));
  if (ZDICT_isError(n)) {
    return Unavailable(std::string("no pack dictionary: ") + ZDICT_getErrorName(n));
  }
  dictionary.resize(n);
  return std::shared_ptr<const PackDictionary>(new PackDictionary(id, dictionary));
}

PackDictionary::PackDictionary(uint32_t id, const std::string& dictionary)
    : id_(id),
      bytes_(dictionary.size()),
      compress_(ZSTD_createCDict(dictionary.data(), dictionary.size(), kLevel)),
      decompress_(ZSTD_createDDict(dictionary.data(), dictionary.size())) {
  SKIFF_CHECK(compress_ != nullptr && decompress_ != nullptr);
}

PackDictionary::~PackDictionary() {
  ZSTD_freeCDict(compress_);
  ZSTD_freeDDict(decompress_);
}

}  // namespace skiff::doc

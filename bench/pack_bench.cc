// The pack family: what the packed memory tier costs and saves per document.
//
// BM_Pack / BM_Unpack time the packed form the server uses (doc/pack.h) on
// ~940-byte guild documents (kind 0, a fixed set of 256) and on one ~870 KB
// guild (kind 1); BM_ParseText is the JSON-text baseline. BM_Candidate* time
// the formats the packed form was chosen from (docs/memory-tiers.md has the
// table). BM_Memory reports what one document occupies on the heap in the hot
// (parsed) and packed forms. Packed byte counts are deterministic (the bytes
// each form produced; the documents come from a seeded generator); the JSON
// text size is the input's, info. Every encoding in a timed loop is compared
// with the form made before it (mismatches counted in the loop), and every
// form is checked after the loop to read back to the original document.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <zdict.h>
#include <zstd.h>

#include "doc/document.h"
#include "doc/internal/msgpack.h"
#include "doc/pack.h"
#include "support/bench_registry.h"
#include "support/counters.h"
#include "support/doc_generator.h"
#include "support/heap_counter.h"

namespace skiff::bench {
namespace {

constexpr uint64_t kSeed = 1;             // the measured documents
constexpr uint64_t kDictionarySeed = 99;  // training data for the dictionary candidate
constexpr int kSmallCount = 256;

enum DocKind { kSmall = 0, kLarge = 1 };

struct Corpus {
  std::vector<doc::Value> values;
  std::vector<std::string> texts;
  double json_bytes = 0;  // average compact JSON text per document
};

const Corpus& GetCorpus(int kind) {
  static const auto* corpora = [] {
    auto* c = new Corpus[2];  // built once, used until exit
    for (int i = 0; i < kSmallCount; ++i)
      c[kSmall].values.push_back(support::GuildDocument(kSeed, i));
    c[kLarge].values.push_back(support::DocGenerator(kSeed).LargeGuild());
    for (int k = 0; k < 2; ++k) {
      for (const doc::Value& v : c[k].values) {
        c[k].texts.push_back(doc::Dump(v));
        c[k].json_bytes += static_cast<double>(c[k].texts.back().size());
      }
      c[k].json_bytes /= static_cast<double>(c[k].values.size());
    }
    return c;
  }();
  return corpora[kind];
}

bool ValidKind(benchmark::State& state) {
  if (state.range(0) == kSmall || state.range(0) == kLarge) return true;
  state.SkipWithError("document kind must be 0 (1 KB) or 1 (870 KB)");
  return false;
}

void SetSizes(benchmark::State& state, const Corpus& corpus, double packed_bytes) {
  SetInfo(state, "json_bytes", corpus.json_bytes);
  SetDeterministic(state, "packed_bytes", packed_bytes);
}

// Average size of `forms`.
double AverageBytes(const std::vector<std::string>& forms) {
  double bytes = 0;
  for (const std::string& f : forms) bytes += static_cast<double>(f.size());
  return bytes / static_cast<double>(forms.size());
}

void BM_Pack(benchmark::State& state) {
  if (!ValidKind(state)) return;
  const Corpus& corpus = GetCorpus(static_cast<int>(state.range(0)));
  std::vector<std::string> expected;
  for (const doc::Value& v : corpus.values) expected.push_back(doc::Pack(v));
  size_t i = 0;
  uint64_t differ = 0;
  for (auto _ : state) {
    std::string packed = doc::Pack(corpus.values[i]);
    benchmark::DoNotOptimize(packed.data());
    differ += packed != expected[i];  // a memcmp: small beside the packing
    if (++i == corpus.values.size()) i = 0;
  }
  if (differ > 0) return state.SkipWithError("Pack gave one document different bytes");
  for (size_t j = 0; j < expected.size(); ++j) {
    Result<doc::Value> back = doc::Unpack(expected[j]);
    if (!back.ok() || *back != corpus.values[j]) {
      return state.SkipWithError("Unpack(Pack(doc)) differs from doc");
    }
  }
  SetSizes(state, corpus, AverageBytes(expected));
}

void BM_Unpack(benchmark::State& state) {
  if (!ValidKind(state)) return;
  const Corpus& corpus = GetCorpus(static_cast<int>(state.range(0)));
  std::vector<std::string> packed;
  double bytes = 0;
  for (const doc::Value& v : corpus.values) {
    packed.push_back(doc::Pack(v));
    bytes += static_cast<double>(packed.back().size());
  }
  size_t i = 0;
  bool ok = true;
  for (auto _ : state) {
    Result<doc::Value> v = doc::Unpack(packed[i]);
    ok &= v.ok();
    benchmark::DoNotOptimize(v);
    if (++i == packed.size()) i = 0;
  }
  for (size_t j = 0; ok && j < packed.size(); ++j) {
    Result<doc::Value> v = doc::Unpack(packed[j]);
    ok = v.ok() && *v == corpus.values[j];
  }
  if (!ok) {
    state.SkipWithError("Unpack did not give back the packed document");
    return;
  }
  SetSizes(state, corpus, bytes / static_cast<double>(packed.size()));
}

void BM_ParseText(benchmark::State& state) {
  if (!ValidKind(state)) return;
  const Corpus& corpus = GetCorpus(static_cast<int>(state.range(0)));
  size_t i = 0;
  bool ok = true;
  for (auto _ : state) {
    Result<doc::Value> v = doc::Parse(corpus.texts[i]);
    ok &= v.ok();
    benchmark::DoNotOptimize(v);
    if (++i == corpus.texts.size()) i = 0;
  }
  for (size_t j = 0; ok && j < corpus.texts.size(); ++j) {
    Result<doc::Value> v = doc::Parse(corpus.texts[j]);
    ok = v.ok() && *v == corpus.values[j];
  }
  if (!ok) {
    state.SkipWithError("Parse did not give back the document");
    return;
  }
  SetInfo(state, "json_bytes", corpus.json_bytes);
}

// ---------------------------------------------------------------------------
// Candidates for the packed form. Each turns a Value into bytes and back; the
// server only uses the one doc/pack.h implements.

enum Candidate {
  kJsonText = 0,      // compact JSON text, nlohmann dump / parse
  kNlohmannMsgpack,   // nlohmann to_msgpack / from_msgpack
  kNlohmannCbor,      // nlohmann to_cbor / from_cbor
  kSkiffMsgpack,      // doc/internal/msgpack.h: same bytes, own decoder
  kZstd1Json,         // zstd level 1 over JSON text
  kZstd3Msgpack,      // zstd level 3 over MessagePack (what Pack does)
  kZstd19Msgpack,     // zstd level 19 over MessagePack
  kZstd3MsgpackDict,  // zstd level 3 with a 16 KB dictionary trained on guilds
  kCandidateCount,
};

const char* CandidateName(int c) {
  static const char* const kNames[] = {"json_text",      "nlohmann_msgpack",  "nlohmann_cbor",
                                       "skiff_msgpack",  "zstd1_json",        "zstd3_msgpack",
                                       "zstd19_msgpack", "zstd3_msgpack_dict"};
  return kNames[c];
}

std::string ToString(const std::vector<uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

std::string SkiffMsgpack(const doc::Value& v) {
  std::string out;
  doc::internal::AppendMsgpack(v, out);
  return out;
}

// A 16 KB zstd dictionary trained on 2,000 guilds from another seed than the
// measured ones, so it has not seen the documents it compresses. Empty when
// training fails. Trained once: it takes about a second.
const std::string& TrainedDictionary() {
  static const std::string* dictionary = [] {
    std::string samples;
    std::vector<size_t> sizes;
    for (int i = 0; i < 2000; ++i) {
      const std::string s = SkiffMsgpack(support::GuildDocument(kDictionarySeed, i));
      samples += s;
      sizes.push_back(s.size());
    }
    auto* dict = new std::string(16 * 1024, '\0');  // used until exit
    const size_t n = ZDICT_trainFromBuffer(dict->data(), dict->size(), samples.data(), sizes.data(),
                                           static_cast<unsigned>(sizes.size()));
    dict->resize(ZDICT_isError(n) ? 0 : n);
    return dict;
  }();
  return *dictionary;
}

// zstd contexts for one candidate run, with the trained dictionary for the
// dictionary candidate.
class Zstd {
 public:
  Zstd(int level, bool with_dictionary) : level_(level) {
    if (with_dictionary) {
      const std::string& dictionary = TrainedDictionary();
      if (!dictionary.empty()) {
        cdict_ = ZSTD_createCDict(dictionary.data(), dictionary.size(), level);
        ddict_ = ZSTD_createDDict(dictionary.data(), dictionary.size());
      }
    }
  }
  ~Zstd() {
    ZSTD_freeCCtx(cctx_);
    ZSTD_freeDCtx(dctx_);
    ZSTD_freeCDict(cdict_);
    ZSTD_freeDDict(ddict_);
  }
  Zstd(const Zstd&) = delete;
  Zstd& operator=(const Zstd&) = delete;

  std::string Compress(const std::string& in) {
    std::string out(ZSTD_compressBound(in.size()), '\0');
    const size_t n =
        cdict_
            ? ZSTD_compress_usingCDict(cctx_, out.data(), out.size(), in.data(), in.size(), cdict_)
            : ZSTD_compressCCtx(cctx_, out.data(), out.size(), in.data(), in.size(), level_);
    out.resize(ZSTD_isError(n) ? 0 : n);
    return out;
  }
  std::string Decompress(const std::string& in) {
    const unsigned long long size = ZSTD_getFrameContentSize(in.data(), in.size());
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) return {};
    std::string out(size, '\0');
    const size_t n = ddict_
                         ? ZSTD_decompress_usingDDict(dctx_, out.data(), out.size(), in.data(),
                                                      in.size(), ddict_)
                         : ZSTD_decompressDCtx(dctx_, out.data(), out.size(), in.data(), in.size());
    out.resize(ZSTD_isError(n) ? 0 : n);
    return out;
  }

 private:
  int level_;
  ZSTD_CCtx* cctx_ = ZSTD_createCCtx();
  ZSTD_DCtx* dctx_ = ZSTD_createDCtx();
  ZSTD_CDict* cdict_ = nullptr;
  ZSTD_DDict* ddict_ = nullptr;
};

std::unique_ptr<Zstd> ZstdFor(int c) {
  switch (c) {
    case kZstd1Json:
      return std::make_unique<Zstd>(1, false);
    case kZstd3Msgpack:
      return std::make_unique<Zstd>(3, false);
    case kZstd19Msgpack:
      return std::make_unique<Zstd>(19, false);
    case kZstd3MsgpackDict:
      return std::make_unique<Zstd>(3, true);
    default:
      return nullptr;
  }
}

std::string Encode(int c, Zstd* zstd, const doc::Value& v) {
  switch (c) {
    case kJsonText:
      return doc::Dump(v);
    case kNlohmannMsgpack:
      return ToString(doc::Value::to_msgpack(v));
    case kNlohmannCbor:
      return ToString(doc::Value::to_cbor(v));
    case kSkiffMsgpack:
      return SkiffMsgpack(v);
    case kZstd1Json:
      return zstd->Compress(doc::Dump(v));
    default:
      return zstd->Compress(SkiffMsgpack(v));
  }
}

// Errors come back as a discarded value, which equals no document.
doc::Value Decode(int c, Zstd* zstd, const std::string& bytes) {
  try {
    switch (c) {
      case kJsonText:
        return doc::Value::parse(bytes);
      case kNlohmannMsgpack:
        return doc::Value::from_msgpack(bytes);
      case kNlohmannCbor:
        return doc::Value::from_cbor(bytes);
      case kSkiffMsgpack: {
        Result<doc::Value> v = doc::internal::DecodeMsgpack(bytes);
        return v.ok() ? std::move(*v) : doc::Value(doc::Value::value_t::discarded);
      }
      case kZstd1Json:
        return doc::Value::parse(zstd->Decompress(bytes));
      default: {
        Result<doc::Value> v = doc::internal::DecodeMsgpack(zstd->Decompress(bytes));
        return v.ok() ? std::move(*v) : doc::Value(doc::Value::value_t::discarded);
      }
    }
  } catch (const std::exception&) {
    return doc::Value(doc::Value::value_t::discarded);
  }
}

bool CandidateArgs(benchmark::State& state) {
  if (!ValidKind(state)) return false;
  if (state.range(1) < 0 || state.range(1) >= kCandidateCount) {
    state.SkipWithError("no such candidate");
    return false;
  }
  state.SetLabel(CandidateName(static_cast<int>(state.range(1))));
  return true;
}

void BM_CandidatePack(benchmark::State& state) {
  if (!CandidateArgs(state)) return;
  const Corpus& corpus = GetCorpus(static_cast<int>(state.range(0)));
  const int c = static_cast<int>(state.range(1));
  std::unique_ptr<Zstd> zstd = ZstdFor(c);
  std::vector<std::string> expected;
  for (const doc::Value& v : corpus.values) expected.push_back(Encode(c, zstd.get(), v));
  size_t i = 0;
  uint64_t differ = 0;
  for (auto _ : state) {
    std::string bytes = Encode(c, zstd.get(), corpus.values[i]);
    benchmark::DoNotOptimize(bytes.data());
    differ += bytes != expected[i];
    if (++i == corpus.values.size()) i = 0;
  }
  if (differ > 0) return state.SkipWithError("the candidate gave one document different bytes");
  for (size_t j = 0; j < expected.size(); ++j) {
    if (Decode(c, zstd.get(), expected[j]) != corpus.values[j]) {
      return state.SkipWithError("candidate does not round-trip");
    }
  }
  SetSizes(state, corpus, AverageBytes(expected));
}

void BM_CandidateUnpack(benchmark::State& state) {
  if (!CandidateArgs(state)) return;
  const Corpus& corpus = GetCorpus(static_cast<int>(state.range(0)));
  const int c = static_cast<int>(state.range(1));
  std::unique_ptr<Zstd> zstd = ZstdFor(c);
  std::vector<std::string> encoded;
  for (const doc::Value& v : corpus.values) encoded.push_back(Encode(c, zstd.get(), v));
  size_t i = 0;
  for (auto _ : state) {
    doc::Value v = Decode(c, zstd.get(), encoded[i]);
    benchmark::DoNotOptimize(v);
    if (++i == encoded.size()) i = 0;
  }
  for (size_t j = 0; j < encoded.size(); ++j) {
    if (Decode(c, zstd.get(), encoded[j]) != corpus.values[j]) {
      state.SkipWithError("candidate does not round-trip");
      return;
    }
  }
}

void CandidateArgsAll(benchmark::internal::Benchmark* b) {
  b->ArgNames({"kind", "candidate"})->Unit(benchmark::kMicrosecond);
  for (int kind : {kSmall, kLarge}) {
    for (int c = 0; c < kCandidateCount; ++c) b->Args({kind, c});
  }
}

// ---------------------------------------------------------------------------
// Heap bytes per 1 KB document in each form, counted as glibc holds them
// (support/heap_counter.h), so allocator overhead counts as it does in RSS.

int64_t HeapInUse() { return support::LiveHeapBytes(); }

void BM_Memory(benchmark::State& state) {
  const Corpus& corpus = GetCorpus(kSmall);
  const double n = static_cast<double>(corpus.values.size());
  double hot = 0;
  double packed = 0;
  double text = 0;
  bool ok = true;
  for (auto _ : state) {
    std::vector<doc::Value> trees;
    std::vector<std::string> packs;
    std::vector<std::string> texts;
    trees.reserve(corpus.values.size());
    packs.reserve(corpus.values.size());
    texts.reserve(corpus.values.size());
    int64_t before = HeapInUse();
    for (const std::string& t : corpus.texts) trees.push_back(doc::Value::parse(t));
    hot = static_cast<double>(HeapInUse() - before) / n + sizeof(doc::Value);
    before = HeapInUse();
    for (const doc::Value& v : corpus.values) packs.push_back(doc::Pack(v));
    packed = static_cast<double>(HeapInUse() - before) / n + sizeof(std::string);
    before = HeapInUse();
    for (const std::string& t : corpus.texts) texts.emplace_back(t.data(), t.size());
    text = static_cast<double>(HeapInUse() - before) / n + sizeof(std::string);
    for (size_t j = 0; j < trees.size(); ++j) {
      Result<doc::Value> back = doc::Unpack(packs[j]);
      ok &= trees[j] == corpus.values[j] && back.ok() && *back == corpus.values[j];
    }
  }
  if (!ok) {
    state.SkipWithError("a stored form does not read back to its document");
    return;
  }
  SetInfo(state, "json_bytes", corpus.json_bytes);
  SetInfo(state, "hot_heap_bytes", hot);
  SetInfo(state, "packed_heap_bytes", packed);
  SetInfo(state, "text_heap_bytes", text);
}

const bool kRegistered = AddRegistration([] {
  using Body = void (*)(benchmark::State&);
  const std::pair<const char*, Body> kForms[] = {
      {"BM_Pack", BM_Pack}, {"BM_Unpack", BM_Unpack}, {"BM_ParseText", BM_ParseText}};
  for (const auto& [name, fn] : kForms) {
    AddCase(name, fn)->ArgName("kind")->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMicrosecond);
  }
  AddCase("BM_CandidatePack", BM_CandidatePack)->Apply(CandidateArgsAll);
  AddCase("BM_CandidateUnpack", BM_CandidateUnpack)->Apply(CandidateArgsAll);
  AddCase("BM_Memory", BM_Memory)->Iterations(3)->Unit(benchmark::kMillisecond);
});

}  // namespace
}  // namespace skiff::bench

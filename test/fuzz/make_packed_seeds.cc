// Writes the packed seeds of corpus/unpack/: a few documents run through
// doc::Pack, so the unpack target starts from real packed bytes of both
// formats (plain MessagePack, and zstd over it) instead of having to discover
// the format from nothing. Run once by hand when the packed form changes:
//   fuzz_make_packed_seeds test/fuzz/corpus/unpack

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "doc/document.h"
#include "doc/pack.h"

namespace {

using skiff::doc::Value;

// Each document stresses one part of the MessagePack encoder: every integer
// width and sign, float32 versus float64, string length forms, binary and ext,
// nesting, and a long repetitive document that Pack compresses.
std::vector<std::pair<std::string, Value>> Documents() {
  std::vector<std::pair<std::string, Value>> docs;
  docs.emplace_back("packed_null", Value());
  docs.emplace_back("packed_small_object",
                    Value::parse(R"({"name":"ada","age":36,"admin":true,"tags":["x","y"]})"));
  docs.emplace_back("packed_numbers",
                    Value::parse(R"([0,1,-1,-32,-33,127,128,255,256,65535,65536,-129,-32769,
                        4294967296,-2147483649,9223372036854775807,-9223372036854775808,
                        18446744073709551615,0.5,-0.0,0.1,1e300,3.4028234663852886e38])"));
  docs.emplace_back(
      "packed_strings",
      Value::parse(R"({"":"","a":"0123456789012345678901234567890",)"
                   R"("b":"01234567890123456789012345678901","u":"h\u00e9\u4e16\ud83d\ude00"})"));
  docs.emplace_back("packed_nested", Value::parse(R"({"a":{"b":{"c":[[[{"d":null}]]]}}})"));
  Value binary = Value::object();
  binary["bin"] = Value::binary({1, 2, 3});
  binary["ext1"] = Value::binary({7}, 5);
  binary["ext3"] = Value::binary({7, 8, 9}, 200);
  docs.emplace_back("packed_binary", std::move(binary));
  Value big = Value::array();
  for (int i = 0; i < 40; ++i) {
    big.push_back({{"id", i}, {"name", "player-" + std::to_string(i)}, {"score", i * 1.5}});
  }
  docs.emplace_back("packed_zstd_array", std::move(big));
  return docs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  for (const auto& [name, value] : Documents()) {
    const std::string path = std::string(argv[1]) + "/" + name + ".bin";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const std::string packed = skiff::doc::Pack(value);
    out.write(packed.data(), static_cast<std::streamsize>(packed.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
    std::printf("%s: %zu bytes, format %d\n", path.c_str(), packed.size(), packed[0]);
  }
  return 0;
}

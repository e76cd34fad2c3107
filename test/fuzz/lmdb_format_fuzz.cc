// Fuzz target for the decoders of LmdbStorage's file format
// (src/client/internal/lmdb_format.h), which read bytes from a file that
// may be damaged or another program's. The first byte picks the decoder:
// the meta, an outbox entry (key: the next 9 bytes, value: the rest), a row
// key, or a cut key's bucket. Its promises: any bytes are accepted or
// refused, never a crash or an over-read; whatever is accepted encodes back
// to exactly the same bytes (one value, one encoding); a row key is never
// accepted at the cut length; a bucket holds rows in strictly increasing
// name order, and a refused one leaves the output as it was.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "client/internal/lmdb_format.h"

namespace {

namespace format = skiff::client::internal;

void Meta(std::string_view in) {
  format::LmdbMeta meta;
  if (format::DecodeMeta(in, meta)) SKIFF_CHECK(format::EncodeMeta(meta) == in);
}

void Outbox(std::string_view in) {
  const std::string_view key = in.substr(0, 9), value = in.substr(key.size());
  skiff::client::OutboxEntry entry;
  if (!format::DecodeOutbox(key, value, entry)) return;
  SKIFF_CHECK(format::OutboxKey(entry.seq) == key);
  SKIFF_CHECK(format::EncodeOutbox(entry) == value);
}

void RowKey(std::string_view in) {
  skiff::client::RowName name;
  if (!format::DecodeRowKey(in, name)) return;
  SKIFF_CHECK(!format::IsCutRowKey(in) && in.size() < format::kMaxKeyBytes);
  auto key = format::RowKeyOf(name);
  SKIFF_CHECK(key.has_value() && !key->cut && key->bytes == in);
}

void Bucket(std::string_view in) {
  std::vector<skiff::client::StoredRow> rows = {{{"keep", "", ""}, "me"}};
  if (!format::DecodeBucket(in, rows)) {
    SKIFF_CHECK(rows.size() == 1 && rows[0].value == "me");
    return;
  }
  rows.erase(rows.begin());
  SKIFF_CHECK(!rows.empty());
  for (size_t i = 1; i < rows.size(); ++i) SKIFF_CHECK(rows[i - 1].name < rows[i].name);
  SKIFF_CHECK(format::EncodeBucket(rows) == in);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      Meta(in);
      break;
    case 1:
      Outbox(in);
      break;
    case 2:
      RowKey(in);
      break;
    default:
      Bucket(in);
      break;
  }
  return 0;
}

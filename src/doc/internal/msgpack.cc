#include "doc/internal/msgpack.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

namespace skiff::doc::internal {
namespace {

void PutByte(std::string& out, uint8_t byte) { out.push_back(static_cast<char>(byte)); }

// `tag` followed by `value` in big-endian order, as MessagePack stores numbers.
template <typename T>
void PutTagged(std::string& out, uint8_t tag, T value) {
  PutByte(out, tag);
  for (int shift = 8 * (static_cast<int>(sizeof(T)) - 1); shift >= 0; shift -= 8) {
    PutByte(out, static_cast<uint8_t>(static_cast<uint64_t>(value) >> shift));
  }
}

void PutUnsigned(std::string& out, uint64_t u) {
  if (u < 0x80) {
    PutByte(out, static_cast<uint8_t>(u));  // positive fixint
  } else if (u <= 0xFF) {
    PutTagged(out, 0xCC, static_cast<uint8_t>(u));
  } else if (u <= 0xFFFF) {
    PutTagged(out, 0xCD, static_cast<uint16_t>(u));
  } else if (u <= 0xFFFFFFFF) {
    PutTagged(out, 0xCE, static_cast<uint32_t>(u));
  } else {
    PutTagged(out, 0xCF, u);
  }
}

void PutSigned(std::string& out, int64_t i) {
  if (i >= 0) {
    PutUnsigned(out, static_cast<uint64_t>(i));
  } else if (i >= -32) {
    PutByte(out, static_cast<uint8_t>(i));  // negative fixint
  } else if (i >= std::numeric_limits<int8_t>::min()) {
    PutTagged(out, 0xD0, static_cast<uint8_t>(i));
  } else if (i >= std::numeric_limits<int16_t>::min()) {
    PutTagged(out, 0xD1, static_cast<uint16_t>(i));
  } else if (i >= std::numeric_limits<int32_t>::min()) {
    PutTagged(out, 0xD2, static_cast<uint32_t>(i));
  } else {
    PutTagged(out, 0xD3, static_cast<uint64_t>(i));
  }
}

void PutDouble(std::string& out, double d) {
  // float32 saves four bytes whenever it holds the value exactly (0.5, 100.25,
  // -0.0). The range check comes first: converting an out-of-range double to
  // float is undefined.
  if (std::isfinite(d) && std::fabs(d) <= FLT_MAX &&
      static_cast<double>(static_cast<float>(d)) == d) {
    uint32_t bits;
    const float f = static_cast<float>(d);
    std::memcpy(&bits, &f, sizeof bits);
    PutTagged(out, 0xCA, bits);
    return;
  }
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  PutTagged(out, 0xCB, bits);
}

// The header of a string, array or map of `n` items: a fix form below
// `fix_limit`, else 8- (when `tag8` is nonzero), 16- or 32-bit lengths.
void PutHeader(std::string& out, size_t n, uint8_t fix_base, size_t fix_limit, uint8_t tag8,
               uint8_t tag16, uint8_t tag32) {
  SKIFF_CHECK(n <= std::numeric_limits<uint32_t>::max());
  if (n < fix_limit) {
    PutByte(out, static_cast<uint8_t>(fix_base | n));
  } else if (tag8 != 0 && n <= 0xFF) {
    PutTagged(out, tag8, static_cast<uint8_t>(n));
  } else if (n <= 0xFFFF) {
    PutTagged(out, tag16, static_cast<uint16_t>(n));
  } else {
    PutTagged(out, tag32, static_cast<uint32_t>(n));
  }
}

void PutString(std::string& out, const std::string& s) {
  PutHeader(out, s.size(), 0xA0, 32, 0xD9, 0xDA, 0xDB);
  out += s;
}

void PutBinary(std::string& out, const Value::binary_t& bin) {
  const size_t n = bin.size();
  SKIFF_CHECK(n <= std::numeric_limits<uint32_t>::max());
  if (!bin.has_subtype()) {
    if (n <= 0xFF) {
      PutTagged(out, 0xC4, static_cast<uint8_t>(n));
    } else if (n <= 0xFFFF) {
      PutTagged(out, 0xC5, static_cast<uint16_t>(n));
    } else {
      PutTagged(out, 0xC6, static_cast<uint32_t>(n));
    }
  } else {
    // An ext value; MessagePack gives the type 8 bits, so only subtypes up to
    // 255 survive the trip.
    switch (n) {
      case 1:
        PutByte(out, 0xD4);
        break;
      case 2:
        PutByte(out, 0xD5);
        break;
      case 4:
        PutByte(out, 0xD6);
        break;
      case 8:
        PutByte(out, 0xD7);
        break;
      case 16:
        PutByte(out, 0xD8);
        break;
      default:
        if (n <= 0xFF) {
          PutTagged(out, 0xC7, static_cast<uint8_t>(n));
        } else if (n <= 0xFFFF) {
          PutTagged(out, 0xC8, static_cast<uint16_t>(n));
        } else {
          PutTagged(out, 0xC9, static_cast<uint32_t>(n));
        }
    }
    PutByte(out, static_cast<uint8_t>(bin.subtype()));
  }
  out.append(reinterpret_cast<const char*>(bin.data()), n);
}

void Put(std::string& out, const Value& value, size_t depth) {
  switch (value.type()) {
    case Value::value_t::null:
    case Value::value_t::discarded:  // only a parser callback makes these
      PutByte(out, 0xC0);
      return;
    case Value::value_t::boolean:
      PutByte(out, value.get<bool>() ? 0xC3 : 0xC2);
      return;
    case Value::value_t::number_integer:
      PutSigned(out, value.get<int64_t>());
      return;
    case Value::value_t::number_unsigned:
      PutUnsigned(out, value.get<uint64_t>());
      return;
    case Value::value_t::number_float:
      PutDouble(out, value.get<double>());
      return;
    case Value::value_t::string:
      PutString(out, value.get_ref<const std::string&>());
      return;
    case Value::value_t::binary:
      PutBinary(out, value.get_binary());
      return;
    case Value::value_t::array:
      SKIFF_CHECK(depth < kMaxPackedDepth);
      PutHeader(out, value.size(), 0x90, 16, 0, 0xDC, 0xDD);
      for (const Value& item : value) Put(out, item, depth + 1);
      return;
    case Value::value_t::object:
      SKIFF_CHECK(depth < kMaxPackedDepth);
      PutHeader(out, value.size(), 0x80, 16, 0, 0xDE, 0xDF);
      for (const auto& [key, item] : value.get_ref<const Value::object_t&>()) {
        PutString(out, key);
        Put(out, item, depth + 1);
      }
      return;
  }
  SKIFF_CHECK(false);  // a value_t added to nlohmann without a case here
}

// Reads one value at a time from untrusted bytes. Every length is checked
// against the bytes that remain before anything is allocated for it, so a
// forged header cannot make the decoder reserve gigabytes.
class Decoder {
 public:
  explicit Decoder(std::string_view bytes)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(p_ + bytes.size()) {}

  bool Read(Value& out, size_t depth);
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const std::string& error() const { return error_; }

 private:
  bool Fail(std::string what) {
    if (error_.empty()) error_ = std::move(what);
    return false;
  }
  bool Need(size_t n) { return remaining() >= n || Fail("truncated data"); }

  template <typename T>
  bool Big(T* value) {
    if (!Need(sizeof(T))) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v = (v << 8) | p_[i];
    p_ += sizeof(T);
    *value = static_cast<T>(v);
    return true;
  }
  template <typename T>
  bool Length(size_t* n) {
    T v;
    if (!Big(&v)) return false;
    *n = v;
    return true;
  }

  bool ReadString(size_t n, std::string& out) {
    if (!Need(n)) return false;
    out.assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return true;
  }
  bool ReadBinary(size_t n, Value& out) {
    if (!Need(n)) return false;
    out = Value::binary(Value::binary_t::container_type(p_, p_ + n));
    p_ += n;
    return true;
  }
  bool ReadExt(size_t n, Value& out) {
    if (!Need(1 + n)) return false;
    const uint8_t subtype = *p_++;
    out = Value::binary(Value::binary_t::container_type(p_, p_ + n), subtype);
    p_ += n;
    return true;
  }
  bool ReadArray(size_t n, Value& out, size_t depth);
  bool ReadMap(size_t n, Value& out, size_t depth);

  const uint8_t* p_;
  const uint8_t* end_;
  std::string error_;
};

bool Decoder::ReadArray(size_t n, Value& out, size_t depth) {
  if (depth >= kMaxPackedDepth) return Fail("nesting deeper than the packed form allows");
  if (n > remaining()) return Fail("array longer than its data");  // one byte per item at least
  out = Value::array();
  auto& items = out.get_ref<Value::array_t&>();
  items.resize(n);
  for (Value& item : items) {
    if (!Read(item, depth + 1)) return false;
  }
  return true;
}

bool Decoder::ReadMap(size_t n, Value& out, size_t depth) {
  if (depth >= kMaxPackedDepth) return Fail("nesting deeper than the packed form allows");
  if (n > remaining() / 2) return Fail("map longer than its data");  // key and value
  Value::object_t::Members members;
  members.reserve(n);
  std::string key;
  for (size_t i = 0; i < n; ++i) {
    if (!Need(1)) return false;
    const uint8_t b = *p_++;
    size_t len = 0;
    if ((b & 0xE0) == 0xA0) {
      len = b & 0x1F;
    } else if (b == 0xD9) {
      if (!Length<uint8_t>(&len)) return false;
    } else if (b == 0xDA) {
      if (!Length<uint16_t>(&len)) return false;
    } else if (b == 0xDB) {
      if (!Length<uint32_t>(&len)) return false;
    } else {
      return Fail("map key is not a string");
    }
    if (!ReadString(len, key)) return false;
    members.emplace_back(std::move(key), nullptr);
    if (!Read(members.back().second, depth + 1)) return false;
  }
  // Pack writes members in key order, which FromMembers only checks; forged
  // data out of order is sorted once, and of a repeated key the last stays.
  out = Value(Value::value_t::object);
  out.get_ref<Value::object_t&>() = Value::object_t::FromMembers(std::move(members));
  return true;
}

bool Decoder::Read(Value& out, size_t depth) {
  if (!Need(1)) return false;
  const uint8_t b = *p_++;
  if (b < 0x80) {
    out = static_cast<uint64_t>(b);
    return true;
  }
  if (b >= 0xE0) {
    out = static_cast<int64_t>(static_cast<int8_t>(b));
    return true;
  }
  if ((b & 0xE0) == 0xA0) {
    out = Value::string_t();
    return ReadString(b & 0x1F, out.get_ref<std::string&>());
  }
  if ((b & 0xF0) == 0x90) return ReadArray(b & 0x0F, out, depth);
  if ((b & 0xF0) == 0x80) return ReadMap(b & 0x0F, out, depth);

  size_t n = 0;
  switch (b) {
    case 0xC0:
      out = nullptr;
      return true;
    case 0xC2:
      out = false;
      return true;
    case 0xC3:
      out = true;
      return true;
    case 0xC4:
      return Length<uint8_t>(&n) && ReadBinary(n, out);
    case 0xC5:
      return Length<uint16_t>(&n) && ReadBinary(n, out);
    case 0xC6:
      return Length<uint32_t>(&n) && ReadBinary(n, out);
    case 0xC7:
      return Length<uint8_t>(&n) && ReadExt(n, out);
    case 0xC8:
      return Length<uint16_t>(&n) && ReadExt(n, out);
    case 0xC9:
      return Length<uint32_t>(&n) && ReadExt(n, out);
    case 0xCA: {
      uint32_t bits;
      if (!Big(&bits)) return false;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      out = static_cast<double>(f);
      return true;
    }
    case 0xCB: {
      uint64_t bits;
      if (!Big(&bits)) return false;
      double d;
      std::memcpy(&d, &bits, sizeof d);
      out = d;
      return true;
    }
    case 0xCC: {
      uint8_t v;
      if (!Big(&v)) return false;
      out = static_cast<uint64_t>(v);
      return true;
    }
    case 0xCD: {
      uint16_t v;
      if (!Big(&v)) return false;
      out = static_cast<uint64_t>(v);
      return true;
    }
    case 0xCE: {
      uint32_t v;
      if (!Big(&v)) return false;
      out = static_cast<uint64_t>(v);
      return true;
    }
    case 0xCF: {
      uint64_t v;
      if (!Big(&v)) return false;
      out = v;
      return true;
    }
    case 0xD0: {
      uint8_t v;
      if (!Big(&v)) return false;
      out = static_cast<int64_t>(static_cast<int8_t>(v));
      return true;
    }
    case 0xD1: {
      uint16_t v;
      if (!Big(&v)) return false;
      out = static_cast<int64_t>(static_cast<int16_t>(v));
      return true;
    }
    case 0xD2: {
      uint32_t v;
      if (!Big(&v)) return false;
      out = static_cast<int64_t>(static_cast<int32_t>(v));
      return true;
    }
    case 0xD3: {
      uint64_t v;
      if (!Big(&v)) return false;
      out = static_cast<int64_t>(v);
      return true;
    }
    case 0xD4:
      return ReadExt(1, out);
    case 0xD5:
      return ReadExt(2, out);
    case 0xD6:
      return ReadExt(4, out);
    case 0xD7:
      return ReadExt(8, out);
    case 0xD8:
      return ReadExt(16, out);
    case 0xD9:
    case 0xDA:
    case 0xDB: {
      const bool ok = b == 0xD9   ? Length<uint8_t>(&n)
                      : b == 0xDA ? Length<uint16_t>(&n)
                                  : Length<uint32_t>(&n);
      if (!ok) return false;
      out = Value::string_t();
      return ReadString(n, out.get_ref<std::string&>());
    }
    case 0xDC:
      return Length<uint16_t>(&n) && ReadArray(n, out, depth);
    case 0xDD:
      return Length<uint32_t>(&n) && ReadArray(n, out, depth);
    case 0xDE:
      return Length<uint16_t>(&n) && ReadMap(n, out, depth);
    case 0xDF:
      return Length<uint32_t>(&n) && ReadMap(n, out, depth);
    default:
      return Fail("byte 0xC1 is never used by MessagePack");
  }
}

}  // namespace

void AppendMsgpack(const Value& value, std::string& out) { Put(out, value, 0); }

Result<Value> DecodeMsgpack(std::string_view bytes) {
  Decoder decoder(bytes);
  Value value;
  if (!decoder.Read(value, 0)) {
    return Internal("corrupted packed document: " + decoder.error() + " at byte " +
                    std::to_string(bytes.size() - decoder.remaining()));
  }
  if (decoder.remaining() != 0) {
    return Internal("corrupted packed document: " + std::to_string(decoder.remaining()) +
                    " bytes after the value");
  }
  return value;
}

}  // namespace skiff::doc::internal

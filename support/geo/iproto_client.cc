#include "support/geo/iproto_client.h"

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <msgpuck.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace skiff::bench::geo {
namespace {

// Request types and keys of the protocol (Tarantool's iproto_constants.h).
constexpr uint32_t kSelect = 1, kInsert = 2, kReplace = 3, kEval = 8;
constexpr uint8_t kRequestType = 0x00, kSync = 0x01;
constexpr uint8_t kSpaceId = 0x10, kIndexId = 0x11, kLimit = 0x12, kOffset = 0x13, kIterator = 0x14,
                  kKey = 0x20, kTuple = 0x21, kExpr = 0x27, kData = 0x30, kError = 0x31;
constexpr size_t kGreeting = 128;
// The body of a request is written here in out_; the header and the length
// go right before it once the body's size is known.
constexpr size_t kBodyAt = 64;
constexpr uint32_t kMaxReply = 64 << 20;

Status WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Unavailable(std::string("tarantool: write: ") + std::strerror(errno));
    p += w;
    n -= size_t(w);
  }
  return Status::Ok();
}

Status ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return Unavailable("tarantool closed the connection");
    if (r < 0) return Unavailable(std::string("tarantool: read: ") + std::strerror(errno));
    p += r;
    n -= size_t(r);
  }
  return Status::Ok();
}

// The point [x, y], as a key or a tuple field.
char* EncodePoint(char* b, double x, double y) {
  b = mp_encode_array(b, 2);
  b = mp_encode_double(b, x);
  return mp_encode_double(b, y);
}

bool DecodeNumber(const char** p, double* out) {
  switch (mp_typeof(**p)) {
    case MP_DOUBLE:
      *out = mp_decode_double(p);
      return true;
    case MP_FLOAT:
      *out = mp_decode_float(p);
      return true;
    case MP_UINT:
      *out = double(mp_decode_uint(p));
      return true;
    case MP_INT:
      *out = double(mp_decode_int(p));
      return true;
    default:
      return false;
  }
}

// Moves *p past the value of `key` in the map at *p (which has `size`
// entries) and returns true, or returns false when the key is absent.
bool FindKey(const char** p, uint32_t size, uint8_t key) {
  for (uint32_t i = 0; i < size; ++i) {
    if (mp_typeof(**p) == MP_UINT) {
      if (mp_decode_uint(p) == key) return true;
    } else {
      mp_next(p);  // a key of another type
    }
    mp_next(p);  // the value
  }
  return false;
}

}  // namespace

Result<std::unique_ptr<IprotoClient>> IprotoClient::Connect(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Unavailable("socket failed");
  std::unique_ptr<IprotoClient> client(new IprotoClient(fd));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Unavailable("cannot connect to tarantool on port " + std::to_string(port));
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const timeval timeout{10, 0};  // a peer that stops answering fails the request
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  char greeting[kGreeting];
  SKIFF_RETURN_IF_ERROR(ReadAll(fd, greeting, sizeof greeting));
  if (std::memcmp(greeting, "Tarantool", 9) != 0) {
    return Unavailable("port " + std::to_string(port) + " does not greet as Tarantool");
  }
  client->out_.resize(kBodyAt + 256);
  return client;
}

IprotoClient::~IprotoClient() { close(fd_); }

char* IprotoClient::Body() { return out_.data() + kBodyAt; }

Status IprotoClient::RoundTrip(uint32_t type, size_t body_len) {
  char header[32];
  char* h = mp_encode_map(header, 2);
  h = mp_encode_uint(h, kRequestType);
  h = mp_encode_uint(h, type);
  h = mp_encode_uint(h, kSync);
  h = mp_encode_uint(h, ++sync_);
  const size_t header_len = size_t(h - header);
  char* start = Body() - header_len - 5;
  *start = char(0xce);
  mp_store_u32(start + 1, uint32_t(header_len + body_len));
  std::memcpy(start + 5, header, header_len);
  SKIFF_RETURN_IF_ERROR(WriteAll(fd_, start, 5 + header_len + body_len));

  char prefix[5];
  SKIFF_RETURN_IF_ERROR(ReadAll(fd_, prefix, sizeof prefix));
  if (uint8_t(prefix[0]) != 0xce) return Internal("tarantool: unexpected length prefix");
  const char* lp = prefix + 1;
  const uint32_t len = mp_load_u32(&lp);
  if (len == 0 || len > kMaxReply)
    return Internal("tarantool: reply of " + std::to_string(len) + " bytes");
  in_.resize(len);
  SKIFF_RETURN_IF_ERROR(ReadAll(fd_, in_.data(), len));

  const char* p = in_.data();
  const char* end = p + len;
  const char* check = p;
  if (mp_typeof(*p) != MP_MAP || mp_check(&check, end) != 0) {
    return Internal("tarantool: malformed reply header");
  }
  uint32_t code = UINT32_MAX;
  uint64_t sync = 0;
  for (uint32_t n = mp_decode_map(&p), i = 0; i < n; ++i) {
    if (mp_typeof(*p) != MP_UINT) {
      mp_next(&p);
      mp_next(&p);
      continue;
    }
    const uint64_t key = mp_decode_uint(&p);
    if (key == kRequestType && mp_typeof(*p) == MP_UINT) {
      code = uint32_t(mp_decode_uint(&p));
    } else if (key == kSync && mp_typeof(*p) == MP_UINT) {
      sync = mp_decode_uint(&p);
    } else {
      mp_next(&p);
    }
  }
  if (sync != sync_) return Internal("tarantool: reply to another request");
  body_ = size_t(p - in_.data());
  check = p;
  if (p == end || mp_typeof(*p) != MP_MAP || mp_check(&check, end) != 0) {
    if (code == 0 && p == end) return Status::Ok();  // no body
    return Internal("tarantool: malformed reply body");
  }
  if (code == 0) return Status::Ok();
  std::string message = "error " + std::to_string(code & 0x7fff);
  const uint32_t entries = mp_decode_map(&p);
  if (FindKey(&p, entries, kError) && mp_typeof(*p) == MP_STR) {
    uint32_t n = 0;
    const char* s = mp_decode_str(&p, &n);
    message.assign(s, n);
  }
  return Internal("tarantool: " + message);
}

Status IprotoClient::PutPoint(uint32_t space, bool replace, uint64_t id, double x, double y) {
  char* b = Body();
  b = mp_encode_map(b, 2);
  b = mp_encode_uint(b, kSpaceId);
  b = mp_encode_uint(b, space);
  b = mp_encode_uint(b, kTuple);
  b = mp_encode_array(b, 2);
  b = mp_encode_uint(b, id);
  b = EncodePoint(b, x, y);
  return RoundTrip(replace ? kReplace : kInsert, size_t(b - Body()));
}

Status IprotoClient::SelectPoints(uint32_t space, uint32_t index, uint32_t iterator, double x,
                                  double y, uint32_t limit, std::vector<PointTuple>* out) {
  char* b = Body();
  b = mp_encode_map(b, 6);
  b = mp_encode_uint(b, kSpaceId);
  b = mp_encode_uint(b, space);
  b = mp_encode_uint(b, kIndexId);
  b = mp_encode_uint(b, index);
  b = mp_encode_uint(b, kLimit);
  b = mp_encode_uint(b, limit);
  b = mp_encode_uint(b, kOffset);
  b = mp_encode_uint(b, 0);
  b = mp_encode_uint(b, kIterator);
  b = mp_encode_uint(b, iterator);
  b = mp_encode_uint(b, kKey);
  b = EncodePoint(b, x, y);
  SKIFF_RETURN_IF_ERROR(RoundTrip(kSelect, size_t(b - Body())));

  const char* p = in_.data() + body_;
  if (body_ == in_.size() || !FindKey(&p, mp_decode_map(&p), kData) || mp_typeof(*p) != MP_ARRAY) {
    return Internal("tarantool: select reply without data");
  }
  out->clear();
  const uint32_t tuples = mp_decode_array(&p);
  for (uint32_t i = 0; i < tuples; ++i) {
    if (mp_typeof(*p) != MP_ARRAY || mp_decode_array(&p) != 2 || mp_typeof(*p) != MP_UINT) {
      return Internal("tarantool: a tuple is not [id, [x, y]]");
    }
    PointTuple t{};
    t.id = mp_decode_uint(&p);
    if (mp_typeof(*p) != MP_ARRAY || mp_decode_array(&p) != 2 || !DecodeNumber(&p, &t.x) ||
        !DecodeNumber(&p, &t.y)) {
      return Internal("tarantool: a point is not [x, y]");
    }
    out->push_back(t);
  }
  return Status::Ok();
}

Result<int64_t> IprotoClient::EvalInteger(const std::string& expr) {
  if (expr.size() > 200) return BadRequest("expression too long");
  char* b = Body();
  b = mp_encode_map(b, 2);
  b = mp_encode_uint(b, kExpr);
  b = mp_encode_str(b, expr.data(), uint32_t(expr.size()));
  b = mp_encode_uint(b, kTuple);
  b = mp_encode_array(b, 0);
  SKIFF_RETURN_IF_ERROR(RoundTrip(kEval, size_t(b - Body())));
  const char* p = in_.data() + body_;
  if (body_ == in_.size() || !FindKey(&p, mp_decode_map(&p), kData) || mp_typeof(*p) != MP_ARRAY ||
      mp_decode_array(&p) < 1) {
    return Internal("tarantool: eval returned nothing");
  }
  if (mp_typeof(*p) == MP_UINT) return int64_t(mp_decode_uint(&p));
  if (mp_typeof(*p) == MP_INT) return mp_decode_int(&p);
  return Internal("tarantool: eval did not return an integer");
}

}  // namespace skiff::bench::geo

// IprotoClient: a minimal blocking client of Tarantool's binary protocol
// (IPROTO), enough for the geo benchmark: INSERT, REPLACE, SELECT by an index
// with an iterator, and EVAL of a Lua expression.
//
// A request is one packet: a MessagePack uint32 length, a header map
// {REQUEST_TYPE, SYNC} and a body map, built with msgpuck. The reply's header
// carries the code (0, or 0x8000 | error) and the body the data or the error
// message. Every reply is validated with mp_check before it is decoded, so a
// truncated or malformed packet is an error, never a read past the buffer.
// One request in flight; the guest user (no AUTH). Thread-compatible.
#ifndef SKIFF_SUPPORT_GEO_IPROTO_CLIENT_H_
#define SKIFF_SUPPORT_GEO_IPROTO_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace skiff::bench::geo {

class IprotoClient {
 public:
  // The iterator the geo benchmark selects with (box.index.NEIGHBOR).
  static constexpr uint32_t kIteratorNeighbor = 11;

  // Connects to 127.0.0.1:port and reads the 128-byte greeting.
  static Result<std::unique_ptr<IprotoClient>> Connect(uint16_t port);
  ~IprotoClient();
  IprotoClient(const IprotoClient&) = delete;
  IprotoClient& operator=(const IprotoClient&) = delete;

  // INSERT (replace = false) or REPLACE the tuple [id, [x, y]].
  Status PutPoint(uint32_t space, bool replace, uint64_t id, double x, double y);

  struct PointTuple {
    uint64_t id;
    double x, y;
  };
  // SELECT from `index` with `iterator` and the key [x, y], up to `limit`
  // tuples of the shape [id, [x, y]].
  Status SelectPoints(uint32_t space, uint32_t index, uint32_t iterator, double x, double y,
                      uint32_t limit, std::vector<PointTuple>* out);

  // EVAL `expr` (no arguments); its first result must be an integer.
  Result<int64_t> EvalInteger(const std::string& expr);

 private:
  explicit IprotoClient(int fd) : fd_(fd) {}
  // Sends the request in out_ (its body starts at out_ + 5 + header), waits
  // for the reply and leaves its body in in_ from body_. Error replies come
  // back as internal with Tarantool's message.
  Status RoundTrip(uint32_t type, size_t body_len);
  char* Body();  // where the body of the next request is written

  int fd_;
  uint64_t sync_ = 0;
  std::vector<char> out_;
  std::vector<char> in_;
  size_t body_ = 0;
};

}  // namespace skiff::bench::geo

#endif  // SKIFF_SUPPORT_GEO_IPROTO_CLIENT_H_

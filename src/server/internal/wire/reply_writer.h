// ReplyWriter: one success reply, {"id":N,"ok":true,...}, written member by
// member into a buffer, so no reply is built by reopening text already
// closed. Member names are the protocol's own (plain ASCII, no escaping);
// values are JSON text the caller has (Raw), or written here.
// Thread-compatible: one writer per reply.
#ifndef SKIFF_SERVER_INTERNAL_WIRE_REPLY_WRITER_H_
#define SKIFF_SERVER_INTERNAL_WIRE_REPLY_WRITER_H_

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace skiff::server::internal {

class ReplyWriter {
 public:
  // Starts the reply in `out` (which it appends to).
  ReplyWriter(std::string& out, uint64_t id) : out_(out) {
    out_ += "{\"id\":";
    AppendNumber(id);
    out_ += ",\"ok\":true";
  }

  // ,"name":json (json is JSON text already).
  ReplyWriter& Raw(std::string_view name, std::string_view json) {
    Name(name);
    out_ += json;
    return *this;
  }
  ReplyWriter& Bool(std::string_view name, bool value) {
    return Raw(name, value ? "true" : "false");
  }
  ReplyWriter& Number(std::string_view name, uint64_t value) {
    Name(name);
    AppendNumber(value);
    return *this;
  }
  // Where a member's value is written by the caller, straight into out().
  ReplyWriter& Open(std::string_view name) {
    Name(name);
    return *this;
  }
  std::string& out() { return out_; }

  // Closes the reply and returns its text.
  std::string& Finish() {
    out_ += '}';
    return out_;
  }

 private:
  void Name(std::string_view name) {
    out_ += ",\"";
    out_ += name;
    out_ += "\":";
  }
  void AppendNumber(uint64_t n) {
    char digits[24];
    out_.append(digits, std::to_chars(digits, digits + sizeof digits, n).ptr);
  }

  std::string& out_;
};

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_WIRE_REPLY_WRITER_H_

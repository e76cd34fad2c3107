#include "server/cluster/relay_frame.h"

#include <charconv>
#include <cstddef>
#include <cstdint>

#include "doc/json_skip.h"

namespace skiff::server::cluster {
namespace {

std::string_view Span(const char* begin, const char* end) {
  return std::string_view(begin, static_cast<size_t>(end - begin));
}

// Whether a member name's text between its quotes (already checked by
// doc::SkipJsonString) reads as `name`, a plain ASCII name, under any
// spelling: escapes are decoded, so "i\u0064" is `id`.
bool NameIs(std::string_view raw, std::string_view name) {
  const char* p = raw.data();
  const char* const end = p + raw.size();
  for (const char want : name) {
    if (p == end) return false;
    uint32_t c = static_cast<unsigned char>(*p++);
    if (c == '\\') {
      p = doc::ReadJsonEscape(p, end, &c);
      if (p == nullptr) return false;
    }
    if (c != static_cast<unsigned char>(want)) return false;
  }
  return p == end;
}

// Calls member(raw_name, whole_member_text, value_text) for each top-level
// member of `object`, in order; false when it is not an object. Values end
// where the client's reader ends them (doc/json_skip.h), one level down.
template <typename Fn>
bool ForEachMember(std::string_view s, Fn&& member) {
  const char* const end = s.data() + s.size();
  const char* p = doc::SkipJsonSpace(s.data(), end);
  if (p == end || *p != '{') return false;
  p = doc::SkipJsonSpace(p + 1, end);
  if (p < end && *p == '}') return doc::SkipJsonSpace(p + 1, end) == end;
  for (;;) {
    const char* name_end = doc::SkipJsonString(p, end);
    if (name_end == nullptr) return false;
    const char* v = doc::SkipJsonSpace(name_end, end);
    if (v == end || *v != ':') return false;
    v = doc::SkipJsonSpace(v + 1, end);
    const char* value_end = doc::SkipJsonValue(v, end, 1);
    if (value_end == nullptr) return false;
    member(Span(p + 1, name_end - 1), Span(p, value_end), Span(v, value_end));
    p = doc::SkipJsonSpace(value_end, end);
    if (p == end) return false;
    if (*p == '}') return doc::SkipJsonSpace(p + 1, end) == end;
    if (*p != ',') return false;
    p = doc::SkipJsonSpace(p + 1, end);
  }
}

}  // namespace

std::optional<std::string> WithId(std::string_view object, uint64_t id,
                                  std::initializer_list<std::string_view> drop) {
  std::string out;
  out.reserve(object.size() + 24);
  out += "{\"id\":";
  char digits[24];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, id).ptr);
  const bool ok =
      ForEachMember(object, [&](std::string_view name, std::string_view text, std::string_view) {
        if (NameIs(name, "id")) return;
        for (std::string_view d : drop) {
          if (NameIs(name, d)) return;
        }
        out += ',';
        out += text;
      });
  if (!ok) return std::nullopt;
  out += '}';
  return out;
}

std::string_view MemberText(std::string_view object, std::string_view name) {
  std::string_view found;
  bool seen = false;
  ForEachMember(object, [&](std::string_view n, std::string_view, std::string_view value) {
    if (!seen && NameIs(n, name)) {
      found = value;
      seen = true;
    }
  });
  return found;
}

std::optional<uint64_t> IdOf(std::string_view object) {
  const std::string_view text = MemberText(object, "id");
  uint64_t id = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return id;
}

bool IsMovedReply(std::string_view reply) {
  if (MemberText(reply, "ok") != "false") return false;
  return MemberText(MemberText(reply, "error"), "code") == "\"moved\"";
}

}  // namespace skiff::server::cluster

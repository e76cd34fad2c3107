// Fuzz target for the client's JSON reader (src/client/internal/json_reader.h),
// which takes apart every reply a server sends. Its promises: any text ends
// in true or false, never a crash or an over-read; Skip accepts a whole text
// exactly when it is JSON (nlohmann's parser is the reference, on valid
// UTF-8 within the reader's depth); a span Skip returns is the value's text,
// inside the input, and reads as JSON on its own; both String overloads read
// the same string, the one nlohmann reads from the same token; Unsigned
// reads the digits of the token Skip sees; and walking objects and arrays
// member by member agrees with skipping them whole.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/check.h"
#include "client/internal/json_reader.h"

#include "ws/utf8.h"

namespace {

using skiff::client::internal::JsonReader;

// Below the reader's limits (256 levels skipped, 64 walked), so a refusal for
// depth never counts as a disagreement.
constexpr int kCompareSkipDepth = 200;
constexpr int kCompareWalkDepth = 60;

// The deepest nesting of brackets outside strings.
int Nesting(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

enum class Reference { kAccepts, kRefuses, kNoOpinion };

// nlohmann's verdict on `text` as one JSON text. It refuses a number too
// large for a double (1e400), which JSON's grammar, and so the reader,
// allows: no opinion then.
Reference ReferenceOf(std::string_view text) {
  try {
    const nlohmann::json value = nlohmann::json::parse(text);
    return value.is_discarded() ? Reference::kRefuses : Reference::kAccepts;
  } catch (const nlohmann::json::exception& e) {
    return std::string_view(e.what()).find("number overflow") == std::string_view::npos
               ? Reference::kRefuses
               : Reference::kNoOpinion;
  }
}

bool Inside(std::string_view part, std::string_view whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

void CheckSkip(std::string_view text, bool comparable, int nesting) {
  JsonReader reader(text);
  std::string_view span;
  const bool skipped = reader.Skip(&span);
  const bool whole = skipped && reader.AtEnd();
  const bool compare = comparable && nesting <= kCompareSkipDepth;
  if (compare) {
    const Reference reference = ReferenceOf(text);
    if (reference != Reference::kNoOpinion)
      SKIFF_CHECK(whole == (reference == Reference::kAccepts));
  }
  if (!skipped) return;
  SKIFF_CHECK(!span.empty() && Inside(span, text));
  // The span is one value on its own, and skipping it again covers it all.
  JsonReader again(span);
  std::string_view span_again;
  SKIFF_CHECK(again.Skip(&span_again) && again.AtEnd() && span_again == span);
  if (compare) SKIFF_CHECK(ReferenceOf(span) != Reference::kRefuses);
}

void CheckString(std::string_view text, bool comparable) {
  JsonReader copy_reader(text), view_reader(text), skip_reader(text);
  std::string copied;
  std::string_view viewed, span;
  const bool copy_ok = copy_reader.String(&copied);
  SKIFF_CHECK(view_reader.String(&viewed) == copy_ok);
  if (!copy_ok) return;
  SKIFF_CHECK(viewed == copied);
  SKIFF_CHECK(skip_reader.Skip(&span) && span.front() == '"');
  // Both readers stopped at the same place: what follows reads the same.
  SKIFF_CHECK(copy_reader.AtEnd() == skip_reader.AtEnd());
  SKIFF_CHECK(view_reader.AtEnd() == skip_reader.AtEnd());
  if (comparable) {
    const nlohmann::json parsed = nlohmann::json::parse(span, nullptr, false);
    SKIFF_CHECK(parsed.is_string() && parsed.get_ref<const std::string&>() == copied);
  }
}

void CheckUnsigned(std::string_view text) {
  JsonReader reader(text), skip_reader(text);
  uint64_t value = 0;
  if (!reader.Unsigned(&value)) return;
  std::string_view span;
  SKIFF_CHECK(skip_reader.Skip(&span) && span == std::to_string(value));
  SKIFF_CHECK(reader.AtEnd() == skip_reader.AtEnd());
}

// Reads one value the way the SDK's reply decoders do: objects and arrays
// member by member, anything else skipped whole.
bool Walk(JsonReader& reader, int depth) {
  bool done = false;
  JsonReader probe = reader;
  if (probe.BeginObject()) {
    reader = probe;
    std::string_view name;
    while (reader.NextMember(&name, &done)) {
      if (done) return true;
      if (!Walk(reader, depth + 1)) return false;
    }
    return false;
  }
  probe = reader;
  if (probe.BeginArray()) {
    reader = probe;
    while (reader.NextElement(&done)) {
      if (done) return true;
      if (!Walk(reader, depth + 1)) return false;
    }
    return false;
  }
  return reader.Skip();
}

void CheckWalk(std::string_view text, int nesting) {
  if (nesting > kCompareWalkDepth) return;
  JsonReader walker(text), skipper(text);
  const bool walked = Walk(walker, 0);
  SKIFF_CHECK(walked == skipper.Skip());
  if (walked) SKIFF_CHECK(walker.AtEnd() == skipper.AtEnd());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The reader leaves UTF-8 to the WebSocket layer; nlohmann checks it, so
  // the two are compared only on text that layer would pass. nlohmann also
  // ends its input at a NUL byte, where JSON has no such rule.
  const bool comparable = skiff::ws::IsValidUtf8(text) && text.find('\0') == std::string_view::npos;
  const int nesting = Nesting(text);
  CheckSkip(text, comparable, nesting);
  CheckString(text, comparable);
  CheckUnsigned(text);
  CheckWalk(text, nesting);
  return 0;
}

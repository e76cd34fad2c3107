#include "compare/json_text.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace skiff::compare {
namespace {

constexpr std::array<std::string_view, 6> kTokens = {"-Infinity", "Infinity", "-NaN",
                                                     "NaN",       "-nan",     "nan"};

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::string NullNonFiniteNumbers(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];  // an escaped character never ends the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool replaced = false;
    if (c == '-' || c == 'N' || c == 'I' || c == 'n') {
      for (std::string_view token : kTokens) {
        if (text.substr(i, token.size()) != token) continue;
        const size_t end = i + token.size();
        // Whole tokens only: not the start of a longer word.
        if (end < text.size() && IsWordChar(text[end])) continue;
        out += "null";
        i = end - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

size_t MaxNesting(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace skiff::compare

// Base64url (RFC 4648 section 5) as JWS uses it: the URL alphabet, no
// padding. Decoding is strict: a '=', a '+' or '/', whitespace, a length of
// 1 mod 4 or non-zero unused bits are refused, so one byte string has one
// text and a token cannot be altered without changing its signed bytes.
// Pure functions; thread-safe.
#ifndef SKIFF_SERVER_AUTH_BASE64URL_H_
#define SKIFF_SERVER_AUTH_BASE64URL_H_

#include <optional>
#include <string>
#include <string_view>

namespace skiff::server::auth {

// The bytes of `text`; nullopt when it is not strict unpadded base64url.
std::optional<std::string> DecodeBase64Url(std::string_view text);

// The unpadded base64url text of `bytes` (tests and tools make keys with it).
std::string EncodeBase64Url(std::string_view bytes);

}  // namespace skiff::server::auth

#endif  // SKIFF_SERVER_AUTH_BASE64URL_H_

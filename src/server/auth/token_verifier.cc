#include "server/auth/token_verifier.h"

#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "doc/names.h"
#include "server/auth/base64url.h"
#include "server/auth/signature.h"

namespace skiff::server::auth {
namespace {

using nlohmann::json;

// Token JSON nests a level or two; deeper is refused before parsing, so a
// hostile token under a generous size limit cannot make parsing deep.
constexpr int kMaxJsonDepth = 16;

Status Malformed(std::string why) { return Unauthorized("malformed token: " + std::move(why)); }

bool NestsAtMost(std::string_view text, int limit) {
  int depth = 0;
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
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

// The JSON object a token part encodes; nullopt when the part is not strict
// base64url or not a JSON object.
std::optional<json> DecodeObject(std::string_view part) {
  std::optional<std::string> bytes = DecodeBase64Url(part);
  if (!bytes || !NestsAtMost(*bytes, kMaxJsonDepth)) return std::nullopt;
  json value = json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) return std::nullopt;
  return value;
}

// A NumericDate claim (RFC 7519 section 2): absent is nullopt; present but
// not a number is an error.
Result<std::optional<double>> NumericDate(const json& claims, const char* name) {
  auto it = claims.find(name);
  if (it == claims.end()) return std::optional<double>();
  if (!it->is_number()) return Malformed(std::string("'") + name + "' is not a number");
  return std::optional<double>(it->get<double>());
}

Status CheckTimes(const json& claims, int64_t now_s, size_t leeway_s, int64_t* ends_at_s) {
  SKIFF_ASSIGN_OR_RETURN(std::optional<double> exp, NumericDate(claims, "exp"));
  SKIFF_ASSIGN_OR_RETURN(std::optional<double> nbf, NumericDate(claims, "nbf"));
  SKIFF_ASSIGN_OR_RETURN(std::optional<double> iat, NumericDate(claims, "iat"));
  // A token that never expires cannot be withdrawn: refused.
  if (!exp) return Malformed("'exp' is required");
  const double now = static_cast<double>(now_s);
  const double leeway = static_cast<double>(leeway_s);
  const double end = *exp + leeway;
  if (now >= end) return Unauthorized("token expired");
  if (nbf && now + leeway < *nbf) return Unauthorized("token not yet valid");
  // Issued in the future: a wrong clock at the issuer, or a forged date.
  if (iat && now + leeway < *iat) return Unauthorized("token not yet valid");
  constexpr double kLatest = static_cast<double>(std::numeric_limits<int64_t>::max() / 2);
  *ends_at_s =
      end >= kLatest ? static_cast<int64_t>(kLatest) : static_cast<int64_t>(std::ceil(end));
  return Status::Ok();
}

Status CheckAudience(const json& claims, const std::string& audience) {
  if (audience.empty()) return Status::Ok();
  auto aud = claims.find("aud");
  if (aud != claims.end()) {
    if (aud->is_string() && *aud == audience) return Status::Ok();
    if (aud->is_array()) {
      for (const json& one : *aud) {
        if (one.is_string() && one == audience) return Status::Ok();
      }
    }
  }
  return Unauthorized("token audience is wrong");
}

Status CheckIssuer(const json& claims, const std::string& issuer) {
  if (issuer.empty()) return Status::Ok();
  auto iss = claims.find("iss");
  if (iss != claims.end() && iss->is_string() && *iss == issuer) return Status::Ok();
  return Unauthorized("token issuer is wrong");
}

// One list of the permissions claim: absent is empty; each entry a table
// name (or "*" where `star_ok`).
Result<std::vector<std::string>> NameList(const json& grant, const char* name,
                                          const std::string& claim, bool star_ok) {
  std::vector<std::string> names;
  auto it = grant.find(name);
  if (it == grant.end() || it->is_null()) return names;
  const auto bad = [&] {
    return Malformed("claim '" + claim + "'." + name + " must be a list of table names" +
                     (star_ok ? " or \"*\"" : ""));
  };
  if (!it->is_array()) return bad();
  for (const json& entry : *it) {
    if (!entry.is_string()) return bad();
    const std::string& text = entry.get_ref<const std::string&>();
    if (!(star_ok && text == "*") && !doc::ValidateTableName(text).ok()) return bad();
    names.push_back(text);
  }
  return names;
}

Status ReadGrant(const json& claims, const std::string& claim, VerifiedToken& token) {
  auto it = claims.find(claim);
  if (it == claims.end()) return Status::Ok();  // no tables
  if (!it->is_object()) return Malformed("claim '" + claim + "' is not an object");
  SKIFF_ASSIGN_OR_RETURN(token.read, NameList(*it, "read", claim, true));
  SKIFF_ASSIGN_OR_RETURN(token.write, NameList(*it, "write", claim, true));
  SKIFF_ASSIGN_OR_RETURN(token.groups, NameList(*it, "groups", claim, false));
  return Status::Ok();
}

}  // namespace

Status TokenVerifier::CheckSignature(std::string_view alg, const std::string* kid,
                                     std::string_view input, std::string_view signature) const {
  static const Status kNotAllowed =
      Unauthorized("token algorithm is not allowed for the configured key");
  if (alg == "HS256") {
    if (keys_.hmac_key().empty()) return kNotAllowed;
    if (!VerifyHs256(keys_.hmac_key(), input, signature)) {
      return Unauthorized("token signature is wrong");
    }
    return Status::Ok();
  }
  Algorithm wanted;
  if (alg == "RS256") {
    wanted = Algorithm::kRs256;
  } else if (alg == "ES256") {
    wanted = Algorithm::kEs256;
  } else {
    return kNotAllowed;
  }
  // With a JWKS the kid chooses the key; without one the PEM key is the key.
  const PublicKey* key = nullptr;
  if (kid != nullptr && keys_.has_jwks()) {
    key = keys_.FindKid(*kid);
    if (key == nullptr) return Unauthorized("token key id (kid) is unknown");
  } else if (keys_.pem_key() != nullptr) {
    key = keys_.pem_key();
  } else if (keys_.has_jwks()) {
    return Unauthorized("token key id (kid) is unknown");
  } else {
    return kNotAllowed;  // only an HMAC key is configured
  }
  if (key->algorithm != wanted) return kNotAllowed;
  if (!VerifyPublic(*key, input, signature)) return Unauthorized("token signature is wrong");
  return Status::Ok();
}

Result<VerifiedToken> TokenVerifier::Verify(std::string_view token, int64_t now_s) const {
  if (token.size() > settings_.max_bytes) {
    return Unauthorized("token is over the limit of " + std::to_string(settings_.max_bytes) +
                        " bytes");
  }
  const size_t first = token.find('.');
  const size_t second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
    return Malformed("not three dot-separated parts");
  }
  const std::string_view input = token.substr(0, second);
  std::optional<json> header = DecodeObject(token.substr(0, first));
  if (!header) return Malformed("the header is not base64url of a JSON object");
  auto alg = header->find("alg");
  if (alg == header->end() || !alg->is_string()) return Malformed("the header has no 'alg'");
  const std::string& alg_name = alg->get_ref<const std::string&>();
  if (alg_name.size() == 4 && (alg_name[0] | 0x20) == 'n' && (alg_name[1] | 0x20) == 'o' &&
      (alg_name[2] | 0x20) == 'n' && (alg_name[3] | 0x20) == 'e') {
    return Unauthorized("token algorithm 'none' is refused");
  }
  // Extensions the issuer marks critical are ones we do not understand.
  if (header->contains("crit")) return Malformed("the header has 'crit'");
  auto kid = header->find("kid");
  if (kid != header->end() && !kid->is_string()) return Malformed("the header's 'kid' is not text");
  std::optional<std::string> signature = DecodeBase64Url(token.substr(second + 1));
  if (!signature) return Malformed("the signature is not base64url");
  SKIFF_RETURN_IF_ERROR(
      CheckSignature(alg_name, kid == header->end() ? nullptr : &kid->get_ref<const std::string&>(),
                     input, *signature));

  // Signed by a configured key from here on; the claims are still checked.
  std::optional<json> claims = DecodeObject(token.substr(first + 1, second - first - 1));
  if (!claims) return Malformed("the payload is not base64url of a JSON object");
  VerifiedToken verified;
  SKIFF_RETURN_IF_ERROR(CheckTimes(*claims, now_s, settings_.leeway_s, &verified.ends_at_s));
  SKIFF_RETURN_IF_ERROR(CheckAudience(*claims, settings_.audience));
  SKIFF_RETURN_IF_ERROR(CheckIssuer(*claims, settings_.issuer));
  auto sub = claims->find("sub");
  if (sub == claims->end() || !sub->is_string() || sub->get_ref<const std::string&>().empty() ||
      sub->get_ref<const std::string&>()[0] == '$') {
    return Unauthorized("token subject (sub) is missing or not a valid user name");
  }
  verified.subject = sub->get<std::string>();
  SKIFF_RETURN_IF_ERROR(ReadGrant(*claims, settings_.claim, verified));
  return verified;
}

Result<std::shared_ptr<const TokenVerifier>> LoadTokenVerifier(const TokenSettings& settings) {
  if (!settings.enabled()) return BadRequest("no token key file is set");
  if (settings.max_bytes < 64) return BadRequest("token max bytes must be at least 64");
  if (settings.claim.empty()) return BadRequest("the token claim name must not be empty");
  KeySet keys;
  const auto load = [](const char* flag, const std::string& path, auto&& set) -> Status {
    if (path.empty()) return Status::Ok();
    Result<std::string> text = ReadKeyFile(path);
    if (!text.ok()) return Unavailable(std::string(flag) + ": " + text.status().message());
    Status status = set(*std::move(text));
    if (!status.ok()) {
      return BadRequest(std::string(flag) + ": '" + path + "': " + status.message());
    }
    return Status::Ok();
  };
  SKIFF_RETURN_IF_ERROR(load("--token-hs256-key", settings.hs256_key_file,
                             [&](std::string t) { return keys.SetHmacKey(std::move(t)); }));
  SKIFF_RETURN_IF_ERROR(load("--token-public-key", settings.public_key_file,
                             [&](std::string t) { return keys.SetPemKey(t); }));
  SKIFF_RETURN_IF_ERROR(
      load("--token-jwks", settings.jwks_file, [&](std::string t) { return keys.AddJwks(t); }));
  return std::make_shared<const TokenVerifier>(std::move(keys), settings);
}

}  // namespace skiff::server::auth

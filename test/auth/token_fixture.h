// Keys and tokens for the token sign-in tests, made at test time by Node's
// crypto (make_tokens.mjs), an implementation independent of the server's,
// into a fresh temporary directory removed at the end.
// Thread-compatible: one per test suite.
#ifndef SKIFF_TEST_AUTH_TOKEN_FIXTURE_H_
#define SKIFF_TEST_AUTH_TOKEN_FIXTURE_H_

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>
#include <stdlib.h>

#include "support/skiffd_process.h"

namespace skiff::testing {

class TokenFiles {
 public:
  // Runs the maker; ok() is false (and why() says why) when it failed.
  TokenFiles() {
    std::string pattern = (std::filesystem::temp_directory_path() / "skiff-tokens-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      why_ = "mkdtemp failed";
      return;
    }
    dir_ = pattern;
    const int status = support::RunCommand(
        {SKIFF_NODE, std::string(SKIFF_SOURCE_DIR) + "/test/auth/make_tokens.mjs", dir_.string()});
    if (status != 0) {
      why_ = "make_tokens.mjs exited with " + std::to_string(status);
      return;
    }
    std::ifstream in(dir_ / "tokens.json");
    std::stringstream text;
    text << in.rdbuf();
    doc_ = nlohmann::json::parse(text.str(), nullptr, false);
    if (!doc_.is_object() || !doc_.contains("tokens")) why_ = "tokens.json is unreadable";
  }
  ~TokenFiles() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  TokenFiles(const TokenFiles&) = delete;
  TokenFiles& operator=(const TokenFiles&) = delete;

  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  // The token named `name` in make_tokens.mjs; "" for a name it lacks.
  std::string Token(const std::string& name) const {
    return doc_["tokens"].value(name, std::string());
  }
  int64_t now() const { return doc_.value("now", int64_t{0}); }
  std::string audience() const { return doc_.value("audience", std::string()); }
  std::string issuer() const { return doc_.value("issuer", std::string()); }

 private:
  std::filesystem::path dir_;
  nlohmann::json doc_;
  std::string why_;
};

}  // namespace skiff::testing

#endif  // SKIFF_TEST_AUTH_TOKEN_FIXTURE_H_

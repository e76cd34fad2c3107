// `skiff call OP [NAME=VALUE...]`: sends one request to a running skiffd and
// prints the reply, the way redis-cli and psql let a user try a server.
#ifndef SKIFF_CMD_CALL_H_
#define SKIFF_CMD_CALL_H_

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace skiff::cmd {

// What `skiff call` was asked to send, and where.
struct CallRequest {
  std::string url = "ws://127.0.0.1:7420";
  std::string user;
  std::string secret;
  int timeout_ms = 10000;
  std::string op;
  std::vector<std::string> fields;  // NAME=VALUE
};

// Adds the `call` command and its table of options to skiff's `app`, bound
// to `request`; --url, --user and --secret also read SKIFF_URL, SKIFF_USER
// and SKIFF_SECRET.
CLI::App* AddCallCommand(CLI::App& app, CallRequest& request);

// Sends the request. Exit code: 0 the server answered ok, 1 it answered
// with an error, 6 it could not be reached, 64 a field or the URL is
// malformed.
int RunCall(const CallRequest& request);

}  // namespace skiff::cmd

#endif  // SKIFF_CMD_CALL_H_

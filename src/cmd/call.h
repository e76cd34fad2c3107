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
  std::string url = "ws://127.0.0.1:7420";  // or wss://
  std::string tls_ca;                       // PEM roots for wss://; empty: the system's store
  bool insecure = false;                    // wss:// without checking the certificate
  std::string user;
  std::string secret;
  int timeout_ms = 10000;
  std::string op;
  std::vector<std::string> fields;  // NAME=VALUE
  // `watch`: stop after this many events (0: until SIGINT or SIGTERM).
  size_t count = 0;
};

// Adds the `call` command and its table of options to skiff's `app`, bound
// to `request`; --url, --user, --secret and --tls-ca also read SKIFF_URL,
// SKIFF_USER, SKIFF_SECRET and SKIFF_TLS_CA (--insecure only as a flag, so
// it is never on by accident).
CLI::App* AddCallCommand(CLI::App& app, CallRequest& request);

// Sends the request. Exit code: 0 the server answered ok, 1 it answered
// with an error, 6 it could not be reached (a certificate that fails its
// check included), 64 a field or the URL is malformed.
// `watch` prints one JSON line per event until interrupted (exit 0) or
// `count` events; it resumes by itself across reconnects.
int RunCall(const CallRequest& request);

}  // namespace skiff::cmd

#endif  // SKIFF_CMD_CALL_H_

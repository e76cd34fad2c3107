// `skiff call OP [NAME=VALUE...]`: sends one request to a running skiffd and
// prints the reply, the way redis-cli and psql let a user try a server.
#ifndef SKIFF_CMD_CALL_H_
#define SKIFF_CMD_CALL_H_

#include <string>
#include <vector>

namespace skiff::cmd {

// The usage lines `skiff --help` shows for the command.
extern const char kCallUsage[];

// Runs the command on `args` (the words after "call"). Exit code: 0 the
// server answered ok, 1 it answered with an error, 6 it could not be
// reached, 64 bad arguments.
int RunCall(const std::vector<std::string>& args);

}  // namespace skiff::cmd

#endif  // SKIFF_CMD_CALL_H_

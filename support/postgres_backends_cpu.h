// PostgresBackendsCpu: the CPU a PostgreSQL database's client backends run,
// read from this machine's /proc: what a store's queries cost PostgreSQL,
// beside what they cost the server that sends them. A bench samples before
// and after its timed part and counts what the backends open at both ran
// in between.
//
// The backends are listed from pg_stat_activity (client backends of the
// URL's database, other than the lister's own), so the figure is the
// database's whole client load: right for a bench whose server is the
// database's only user. It needs PostgreSQL's processes in this machine's
// PID namespace; Open checks that (its own backend's process title must
// name its client port) and says unavailable otherwise, such as for a
// container.
//
// Not thread-safe: one caller at a time.
#ifndef SKIFF_SUPPORT_POSTGRES_BACKENDS_CPU_H_
#define SKIFF_SUPPORT_POSTGRES_BACKENDS_CPU_H_

#include <map>
#include <memory>
#include <string>

#include <sys/types.h>

#include "base/status.h"

namespace skiff::support {

class PostgresBackendsCpu {
 public:
  // CPU seconds each listed backend has run so far.
  using Sample = std::map<pid_t, double>;

  static Result<std::unique_ptr<PostgresBackendsCpu>> Open(const std::string& url);
  ~PostgresBackendsCpu();

  Result<Sample> Take();
  // What the backends present in both samples ran between them; a backend
  // that came or went in between is left out (its share is unknown).
  static double Ran(const Sample& from, const Sample& to);

 private:
  struct Connection;  // libpqxx's, kept out of this header
  explicit PostgresBackendsCpu(std::unique_ptr<Connection> conn);
  std::unique_ptr<Connection> conn_;
};

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_POSTGRES_BACKENDS_CPU_H_

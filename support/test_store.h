// TestStore: a fresh, empty store of a chosen kind for one test or benchmark.
//
// memory: a MemoryStore. sqlite: a file in a private temp dir. postgres: the
// test PostgreSQL (support/postgres.h) with a schema of its own, put first on
// the connection's search_path, dropped again when the TestStore goes, so
// tests never see each other's rows and leave nothing behind on a server that
// is not theirs. Owned by one thread; the store itself is thread-safe.
#ifndef SKIFF_SUPPORT_TEST_STORE_H_
#define SKIFF_SUPPORT_TEST_STORE_H_

#include <memory>
#include <string>

#include "base/status.h"
#include "store/store.h"
#include "support/temp_dir.h"

namespace skiff::support {

class TestStore {
 public:
  // kind: "memory", "sqlite" or "postgres". unavailable when the kind's
  // database cannot be had (no PostgreSQL).
  static Result<std::unique_ptr<TestStore>> Open(const std::string& kind);
  ~TestStore();

  store::Store& store() { return *store_; }
  // The URL that opens this same store again (memory: a new empty one).
  const std::string& url() const { return url_; }
  // For postgres: the schema, also the connection's application_name.
  const std::string& pg_schema() const { return pg_schema_; }
  const std::string& pg_admin_url() const { return pg_admin_url_; }
  // Closes the store (a restart test reopens it with store::OpenStore(url())).
  void Close() { store_.reset(); }
  bool is_open() const { return store_ != nullptr; }

 private:
  TestStore() = default;
  TempDir dir_;
  std::string url_;
  std::string pg_admin_url_;  // set for postgres: where to drop the schema
  std::string pg_schema_;
  std::unique_ptr<store::Store> store_;
};

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_TEST_STORE_H_

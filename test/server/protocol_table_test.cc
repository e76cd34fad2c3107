// src/protocol/requests.json, the protocol table the TypeScript client is
// tested against, holds what the server does: the same ops with the same
// request fields in the same order (OpSpecs), the same error codes
// (StatusCode) and the same limits. Compared both ways, so a change to the
// server that the table does not follow fails here, and so does a row the
// server does not have.
#include <cstddef>
#include <fstream>
#include <set>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/status.h"
#include "doc/names.h"
#include "geo/query.h"
#include "server/internal/wire/request_fields.h"
#include "server/server_options.h"
#include "store/store.h"

namespace skiff::server::internal {
namespace {

using nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

json Table() {
  const std::string path = std::string(SKIFF_SOURCE_DIR) + "/src/protocol/requests.json";
  const std::string text = ReadFile(path);
  EXPECT_FALSE(text.empty()) << "cannot read " << path;
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

// The table's name of each field type. No default: a new FieldType fails
// the build (-Wswitch) until the table has a name for it.
std::string TypeName(FieldType type) {
  switch (type) {
    case FieldType::kString:
      return "string";
    case FieldType::kTableName:
      return "table_name";
    case FieldType::kKey:
      return "key";
    case FieldType::kJson:
      return "json";
    case FieldType::kNumber:
      return "number";
    case FieldType::kUnsigned:
      return "unsigned";
    case FieldType::kBool:
      return "bool";
    case FieldType::kPath:
      return "path";
    case FieldType::kScanLimit:
      return "scan_limit";
    case FieldType::kNearLimit:
      return "near_limit";
    case FieldType::kSyncLimit:
      return "sync_limit";
    case FieldType::kScanAfter:
      return "scan_after";
    case FieldType::kSyncAfter:
      return "sync_after";
    case FieldType::kBox:
      return "box";
    case FieldType::kChanges:
      return "changes";
  }
  return "?";
}

// One line per field, "op field type required|optional", so a mismatch
// prints as the lines that differ.
std::string Row(std::string_view op, std::string_view field, std::string_view type, bool required) {
  return std::string(op) + " " + std::string(field) + " " + std::string(type) +
         (required ? " required" : " optional");
}

std::vector<std::string> ServerRows(std::string_view op, std::span<const FieldSpec> fields) {
  std::vector<std::string> rows;
  for (const FieldSpec& f : fields) {
    rows.push_back(Row(op, f.name, TypeName(f.type), f.presence == Presence::kRequired));
  }
  return rows;
}

std::vector<std::string> TableRows(std::string_view op, const json& fields) {
  std::vector<std::string> rows;
  for (const json& f : fields) {
    rows.push_back(Row(op, f.value("name", "?"), f.value("type", "?"), f.value("required", false)));
  }
  return rows;
}

TEST(ProtocolTableTest, ParsesWithTheExpectedSections) {
  const json table = Table();
  ASSERT_TRUE(table.is_object());
  EXPECT_EQ(table.value("version", 0), 1);
  for (const char* section :
       {"ops", "push_change_fields", "error_codes", "server_only_error_codes"}) {
    EXPECT_TRUE(table.contains(section) && table[section].is_array()) << section;
  }
  EXPECT_TRUE(table.contains("limits") && table["limits"].is_object());
}

TEST(ProtocolTableTest, OpsAreTheServersInItsOrder) {
  const json table = Table();
  ASSERT_TRUE(table.is_object());
  std::vector<std::string> server_ops;
  for (const OpSpec& spec : OpSpecs()) server_ops.emplace_back(spec.name);
  std::vector<std::string> table_ops;
  for (const json& op : table["ops"]) table_ops.push_back(op.value("name", "?"));
  EXPECT_EQ(table_ops, server_ops);
}

TEST(ProtocolTableTest, EveryOpHasTheServersFields) {
  const json table = Table();
  ASSERT_TRUE(table.is_object());
  std::set<std::string> seen;
  for (const json& op : table["ops"]) {
    const std::string name = op.value("name", "?");
    seen.insert(name);
    const OpSpec* spec = FindOp(name);
    ASSERT_NE(spec, nullptr) << "the table has an op the server does not: " << name;
    EXPECT_EQ(TableRows(name, op["fields"]), ServerRows(name, spec->fields));
  }
  for (const OpSpec& spec : OpSpecs()) {
    EXPECT_TRUE(seen.contains(std::string(spec.name)))
        << "the server has an op the table does not: " << spec.name;
  }
}

TEST(ProtocolTableTest, PushChangeFieldsAreTheServers) {
  const json table = Table();
  ASSERT_TRUE(table.is_object());
  EXPECT_EQ(TableRows("push.changes[]", table["push_change_fields"]),
            ServerRows("push.changes[]", PushChangeFields()));
}

// Every StatusCode but ok, by its wire name. StatusCodeName reads a table
// indexed by the code and throws past its end, which is how the loop finds
// the last code without naming it (a code added later is found too).
std::vector<std::string> ServerCodes() {
  std::vector<std::string> codes;
  for (int i = static_cast<int>(StatusCode::kOk) + 1;; ++i) {
    try {
      codes.emplace_back(StatusCodeName(static_cast<StatusCode>(i)));
    } catch (const std::out_of_range&) {
      break;
    }
  }
  return codes;
}

TEST(ProtocolTableTest, ErrorCodesAreTheServersBothWays) {
  const json table = Table();
  ASSERT_TRUE(table.is_object());
  std::vector<std::string> listed;
  for (const char* section : {"error_codes", "server_only_error_codes"}) {
    for (const json& code : table[section]) {
      const std::string name = code.get<std::string>();
      EXPECT_TRUE(StatusCodeFromName(name).has_value())
          << section << " has a code the server does not: " << name;
      EXPECT_NE(name, "ok");
      listed.push_back(name);
    }
  }
  const std::vector<std::string> server = ServerCodes();
  ASSERT_GE(server.size(), 9u);
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()),
            std::set<std::string>(server.begin(), server.end()));
  EXPECT_EQ(listed.size(), server.size()) << "a code is listed twice";
}

// The codes a client can meet are the rows of docs/protocol.md's "Error
// codes" table; the server-only ones are not among them.
TEST(ProtocolTableTest, ClientErrorCodesAreTheDocumentedOnes) {
  const json table = Table();
  ASSERT_TRUE(table.is_object());
  const std::string doc = ReadFile(std::string(SKIFF_SOURCE_DIR) + "/docs/protocol.md");
  const size_t start = doc.find("## Error codes");
  ASSERT_NE(start, std::string::npos);
  const std::string section = doc.substr(start, doc.find("\n## ", start + 1) - start);
  for (const json& code : table["error_codes"]) {
    EXPECT_NE(section.find("| `" + code.get<std::string>() + "` |"), std::string::npos)
        << code << " is not a row of docs/protocol.md's error table";
  }
  for (const json& code : table["server_only_error_codes"]) {
    EXPECT_EQ(section.find("| `" + code.get<std::string>() + "` |"), std::string::npos) << code;
  }
}

TEST(ProtocolTableTest, LimitsAreTheServersDefaults) {
  const json table = Table();
  ASSERT_TRUE(table.is_object());
  const json& limits = table["limits"];
  const ServerOptions defaults;
  EXPECT_EQ(limits.value("max_table_name_bytes", size_t{0}), doc::kMaxTableNameBytes);
  EXPECT_EQ(limits.value("max_key_bytes", size_t{0}), doc::kMaxKeyBytes);
  EXPECT_EQ(limits.value("max_frame_bytes", size_t{0}), defaults.max_frame_bytes);
  EXPECT_EQ(limits.value("max_depth", size_t{0}), defaults.max_depth);
  EXPECT_EQ(limits.value("max_scan_limit", size_t{0}), store::kMaxScanLimit);
  EXPECT_EQ(limits.value("max_near_limit", size_t{0}), geo::kMaxLimit);
}

}  // namespace
}  // namespace skiff::server::internal

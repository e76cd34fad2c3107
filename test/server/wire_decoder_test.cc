// The request decoder, driven by the field table itself: every op decodes
// from a frame with all its fields; leaving out a required field, giving a
// field the wrong type, or adding a field no op knows behaves as
// docs/protocol.md says.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/internal/wire/request_decoder.h"
#include "server/internal/wire/request_fields.h"

#include "test/status_matchers.h"

namespace skiff::server::internal {
namespace {

// A valid value of each field, by op and name (the push change's fields sit
// inside `changes`).
std::string GoodValue(Op op, const std::string& name) {
  static const std::map<std::string, std::string> kCommon = {
      {"user", R"("u")"},
      {"secret", R"("s")"},
      {"token", R"("a.b.c")"},
      {"table", R"("t")"},
      {"key", R"("k")"},
      {"data", R"([1,{"a":null}])"},
      {"value", R"({"a":1})"},
      {"patch", R"({"b":null})"},
      {"path", R"(["a","b"])"},
      {"delta", "2"},
      {"device", R"("d1")"},
      {"changes", R"([{"seq":1,"table":"t","key":"k","group":"g","value":{"x":1}}])"},
      {"since", "3"},
      {"timeout_ms", "100"},
      {"lat", "1.5"},
      {"lon", "-2.5"},
      {"radius_m", "100"},
      {"box_m", "[10,20]"},
      {"values", "true"},
      {"columns", "false"},
      {"prefix", R"("p/")"},
      {"initial", "true"},
      {"watch", "4"},
  };
  if (name == "after") return op == Op::kAll ? R"("k1")" : R"(["g","t","k"])";
  if (name == "limit") return "7";
  return kCommon.at(name);
}

// A value of the wrong type for a field of type `type`; empty when every
// JSON value is valid there.
std::string BadValue(FieldType type) {
  switch (type) {
    case FieldType::kString:
    case FieldType::kTableName:
    case FieldType::kKey:
    case FieldType::kScanAfter:
      return "5";
    case FieldType::kJson:
      return "";
    case FieldType::kNumber:
      return R"("1")";
    case FieldType::kUnsigned:
    case FieldType::kSyncLimit:
      return "-1";
    case FieldType::kBool:
      return "1";
    case FieldType::kPath:
      return R"("a")";
    case FieldType::kScanLimit:
    case FieldType::kNearLimit:
      return "0";
    case FieldType::kSyncAfter:
      return R"(["g"])";
    case FieldType::kBox:
      return "[1]";
    case FieldType::kChanges:
      return "{}";
  }
  return "";
}

// {"id":1,"op":...} with every field of the op but `skip`, `override_name`
// given `override_value`, and `extra` appended.
std::string Frame(const OpSpec& spec, const std::string& skip = "",
                  const std::string& override_name = "", const std::string& override_value = "",
                  const std::string& extra = "") {
  std::string text = R"({"id":1,"op":")" + std::string(spec.name) + '"';
  for (const FieldSpec& f : spec.fields) {
    if (f.name == skip) continue;
    text += ",\"" + std::string(f.name) + "\":";
    text += f.name == override_name ? override_value : GoodValue(spec.op, f.name);
  }
  return text + extra + "}";
}

Result<Request> Decode(const std::string& text) {
  std::optional<uint64_t> id;
  return DecodeRequest(text, doc::Limits{}, &id);
}

TEST(WireDecoderTest, TheTableListsEveryOpInOrder) {
  ASSERT_EQ(OpSpecs().size(), kOpCount);
  for (size_t i = 0; i < kOpCount; ++i) {
    const Op op = static_cast<Op>(i);
    EXPECT_EQ(SpecOf(op).op, op);
    EXPECT_EQ(FindOp(OpName(op)), &SpecOf(op));
  }
  EXPECT_EQ(FindOp("nope"), nullptr);
}

TEST(WireDecoderTest, EveryOpDecodesWithAllItsFields) {
  for (const OpSpec& spec : OpSpecs()) {
    const std::string text = Frame(spec);
    Result<Request> r = Decode(text);
    ASSERT_OK(r) << text;
    EXPECT_EQ(r->op, spec.op) << text;
    EXPECT_EQ(r->id, 1u) << text;
  }
}

TEST(WireDecoderTest, AMissingRequiredFieldIsNamed) {
  for (const OpSpec& spec : OpSpecs()) {
    for (const FieldSpec& f : spec.fields) {
      const std::string text = Frame(spec, f.name);
      Result<Request> r = Decode(text);
      if (f.presence == Presence::kOptional) {
        EXPECT_OK(r) << text;
        continue;
      }
      ASSERT_FALSE(r.ok()) << text;
      EXPECT_EQ(r.status().code(), StatusCode::kBadRequest) << text;
      EXPECT_EQ(r.status().message(), "missing field '" + std::string(f.name) + "'") << text;
    }
  }
}

TEST(WireDecoderTest, AWrongTypeIsNamed) {
  for (const OpSpec& spec : OpSpecs()) {
    for (const FieldSpec& f : spec.fields) {
      const std::string bad = BadValue(f.type);
      if (bad.empty()) continue;
      const std::string text = Frame(spec, "", f.name, bad);
      Result<Request> r = Decode(text);
      ASSERT_FALSE(r.ok()) << text;
      EXPECT_EQ(r.status().code(), StatusCode::kBadRequest) << text;
      EXPECT_EQ(r.status().message().rfind("field '" + std::string(f.name) + "'", 0), 0u)
          << text << ": " << r.status();
    }
  }
}

TEST(WireDecoderTest, UnknownFieldsAreIgnored) {
  for (const OpSpec& spec : OpSpecs()) {
    const std::string text = Frame(spec, "", "", "", R"(,"zzz":{"any":[1]},"v2":null)");
    Result<Request> r = Decode(text);
    ASSERT_OK(r) << text;
    EXPECT_EQ(r->op, spec.op);
  }
}

TEST(WireDecoderTest, FieldsLandInTheirSlots) {
  Result<Request> near = Decode(Frame(SpecOf(Op::kNear)));
  ASSERT_OK(near);
  EXPECT_EQ(near->table, "t");
  EXPECT_EQ(near->geo.lat, 1.5);
  EXPECT_EQ(near->geo.lon, -2.5);
  EXPECT_EQ(near->geo.limit, 7u);
  EXPECT_EQ(near->geo.radius_m, 100.0);
  EXPECT_EQ(near->geo.box_w_m, 10.0);
  EXPECT_EQ(near->geo.box_h_m, 20.0);
  EXPECT_TRUE(near->values);
  EXPECT_FALSE(near->columns);

  Result<Request> push = Decode(Frame(SpecOf(Op::kPush)));
  ASSERT_OK(push);
  EXPECT_EQ(push->push.device, "d1");
  ASSERT_EQ(push->push.changes.size(), 1u);
  EXPECT_EQ(push->push.changes[0].seq, 1u);
  EXPECT_EQ(push->push.changes[0].table, "t");
  EXPECT_EQ(push->push.changes[0].key, "k");
  EXPECT_EQ(push->push.changes[0].group, "g");
  EXPECT_EQ(push->push.changes[0].value, R"({"x":1})");

  Result<Request> boot = Decode(Frame(SpecOf(Op::kBootstrap)));
  ASSERT_OK(boot);
  EXPECT_EQ(boot->limit, 7u);
  EXPECT_EQ(boot->sync_after.group, "g");
  EXPECT_EQ(boot->sync_after.key, "k");

  Result<Request> wait = Decode(Frame(SpecOf(Op::kWait)));
  ASSERT_OK(wait);
  EXPECT_EQ(wait->since, 3u);
  EXPECT_EQ(wait->timeout_ms, 100u);

  Result<Request> login = Decode(Frame(SpecOf(Op::kLogin)));
  ASSERT_OK(login);
  EXPECT_EQ(login->user, "u");
  EXPECT_EQ(login->secret, "s");
}

TEST(WireDecoderTest, AbsentOptionalFieldsTakeTheirDefaults) {
  struct Case {
    std::string text;
    size_t limit;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"id":1,"op":"all","table":"t"})", 1000},
           {R"({"id":1,"op":"all","table":"t","limit":null,"after":null})", 1000},
           {R"({"id":1,"op":"pull"})", kDefaultSyncPage},
           {R"({"id":1,"op":"bootstrap","after":null})", kDefaultSyncPage},
       }) {
    Result<Request> r = Decode(c.text);
    ASSERT_OK(r) << c.text;
    EXPECT_EQ(r->limit, c.limit) << c.text;
  }
  Result<Request> wait = Decode(R"({"id":1,"op":"wait","since":0})");
  ASSERT_OK(wait);
  EXPECT_EQ(wait->timeout_ms, kDefaultWaitMs);
  Result<Request> near = Decode(R"({"id":1,"op":"near","table":"t","lat":0,"lon":0})");
  ASSERT_OK(near);
  EXPECT_EQ(near->geo.limit, 100u);
  EXPECT_FALSE(near->geo.radius_m.has_value());
  EXPECT_FALSE(near->geo.box_w_m.has_value());
}

TEST(WireDecoderTest, NullFollowsTheTableRules) {
  // A required unsigned integer given as null is missing; a required string
  // or number given as null has the wrong type; a path given as null too.
  struct Case {
    std::string text;
    std::string message;
  };
  for (
      const Case& c : std::vector<Case>{
          {R"({"id":1,"op":"wait","since":null})", "missing field 'since'"},
          {R"({"id":1,"op":"get","table":null,"key":"k"})", "field 'table' must be a string"},
          {R"({"id":1,"op":"near","table":"t","lat":null,"lon":0})",
           "field 'lat' must be a number"},
          {R"({"id":1,"op":"add","table":"t","key":"k","path":null,"delta":1})",
           "field 'path' must be an array of strings"},
          {R"({"id":1,"op":"push","device":"d","changes":[{"seq":null}]})",
           "missing field 'changes[0].seq'"},
          {R"({"id":1,"op":"push","device":"d","changes":[{"seq":1,"table":"t","key":"k","group":"g"}]})",
           "missing field 'changes[0].value'"},
          {R"({"id":1,"op":"push","device":"d","changes":[7]})",
           "field 'changes[0]' must be an object"},
      }) {
    Result<Request> r = Decode(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().message(), c.message) << c.text;
  }
  Result<Request> echo = Decode(R"({"id":1,"op":"echo","data":null})");
  ASSERT_OK(echo);
  EXPECT_TRUE(echo->value.is_null());
  Result<Request> deleted = Decode(
      R"({"id":1,"op":"push","device":"d","changes":[{"seq":1,"table":"t","key":"k","group":"g","value":null}]})");
  ASSERT_OK(deleted);
  EXPECT_FALSE(deleted->push.changes[0].value.has_value());
}

TEST(WireDecoderTest, TheFrameDecoderTakesTheFastPathFirst) {
  const std::string text = R"({"id":9,"op":"set","table":"t","key":"k","value":{ "a" : 1 }})";
  Request r;
  std::optional<uint64_t> id;
  ASSERT_OK(DecodeFrame(text, doc::Limits{}, &r, &id));
  EXPECT_EQ(id, 9u);
  EXPECT_EQ(r.raw_value, R"({ "a" : 1 })");  // the scanner keeps the text
  EXPECT_EQ(SetDocumentText(r), R"({"a":1})");

  Request slow;
  ASSERT_OK(
      DecodeFrame(R"({"id":9,"op":"set","table":"t","key":"k","value":{"b":1,"a":2},"op":"set"})",
                  doc::Limits{}, &slow, &id));
  EXPECT_TRUE(slow.raw_value.empty());  // a repeated member: the full decoder
  EXPECT_EQ(SetDocumentText(slow), R"({"a":2,"b":1})");

  Request bad;
  Status s = DecodeFrame(R"({"id":4,"op":"get"})", doc::Limits{}, &bad, &id);
  EXPECT_EQ(s.code(), StatusCode::kBadRequest);
  EXPECT_EQ(id, 4u);
}

}  // namespace
}  // namespace skiff::server::internal

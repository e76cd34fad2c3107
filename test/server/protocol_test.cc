#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/internal/wire/replies.h"
#include "server/internal/wire/request_decoder.h"

#include "test/status_matchers.h"

namespace skiff::server::internal {
namespace {

Result<Request> Decode(const std::string& text, std::optional<uint64_t>* id = nullptr) {
  std::optional<uint64_t> ignored;
  return DecodeRequest(text, doc::Limits{}, id ? id : &ignored);
}

TEST(ProtocolTest, DecodesEveryOp) {
  struct Case {
    std::string text;
    Op op;
  };
  std::vector<Case> cases = {
      {R"({"id":1,"op":"login","user":"u","secret":"s"})", Op::kLogin},
      {R"({"id":1,"op":"logout"})", Op::kLogout},
      {R"({"id":1,"op":"ping"})", Op::kPing},
      {R"({"id":1,"op":"echo","data":[1]})", Op::kEcho},
      {R"({"id":1,"op":"get","table":"t","key":"k"})", Op::kGet},
      {R"({"id":1,"op":"has","table":"t","key":"k"})", Op::kHas},
      {R"({"id":1,"op":"set","table":"t","key":"k","value":null})", Op::kSet},
      {R"({"id":1,"op":"delete","table":"t","key":"k"})", Op::kDelete},
      {R"({"id":1,"op":"add","table":"t","key":"k","path":["a"],"delta":1})", Op::kAdd},
      {R"({"id":1,"op":"merge","table":"t","key":"k","patch":{}})", Op::kMerge},
      {R"({"id":1,"op":"all","table":"t"})", Op::kAll},
      {R"({"id":1,"op":"stats"})", Op::kStats},
  };
  for (const Case& c : cases) {
    Result<Request> r = Decode(c.text);
    ASSERT_OK(r) << c.text << ": " << r.status();
    EXPECT_EQ(r->op, c.op);
    EXPECT_EQ(r->id, 1u);
  }
}

TEST(ProtocolTest, FieldsLandInTheRequest) {
  Result<Request> add = Decode(
      R"({"id":18446744073709551615,"op":"add","table":"t","key":"k","path":["a","b"],"delta":2.5})");
  ASSERT_OK(add);
  EXPECT_EQ(add->id, 18446744073709551615u);
  EXPECT_EQ(add->table, "t");
  EXPECT_EQ(add->key, "k");
  EXPECT_EQ(add->path, (doc::Path{"a", "b"}));
  EXPECT_EQ(add->value, 2.5);

  Result<Request> all = Decode(R"({"id":2,"op":"all","table":"t"})");
  ASSERT_OK(all);
  EXPECT_EQ(all->limit, 1000u);
  EXPECT_TRUE(all->after.empty());
  all = Decode(R"({"id":2,"op":"all","table":"t","after":"k5","limit":10000})");
  ASSERT_OK(all);
  EXPECT_EQ(all->limit, 10000u);
  EXPECT_EQ(all->after, "k5");
}

TEST(ProtocolTest, ErrorsKeepTheIdWhenItWasRead) {
  std::optional<uint64_t> id;
  Result<Request> r = Decode(R"({"id":42,"op":"get","table":"t"})", &id);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kBadRequest);
  EXPECT_EQ(r.status().message(), "missing field 'key'");
  EXPECT_EQ(id, 42u);

  r = Decode("{nope", &id);
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(id.has_value());
}

TEST(ProtocolTest, RejectsBadFields) {
  struct Case {
    std::string text;
    StatusCode code;
  };
  std::vector<Case> cases = {
      {R"({"id":"1","op":"ping"})", StatusCode::kBadRequest},
      {R"({"id":1.5,"op":"ping"})", StatusCode::kBadRequest},
      {R"({"id":1,"op":"get","table":"bad name","key":"k"})", StatusCode::kBadRequest},
      {R"({"id":1,"op":"get","table":"$users","key":"k"})", StatusCode::kBadRequest},
      {R"({"id":1,"op":"get","table":"t","key":""})", StatusCode::kBadRequest},
      {R"({"id":1,"op":"add","table":"t","key":"k","delta":"2"})", StatusCode::kBadRequest},
      {R"({"id":1,"op":"add","table":"t","key":"k","path":"a","delta":2})",
       StatusCode::kBadRequest},
      {R"({"id":1,"op":"all","table":"t","limit":-3})", StatusCode::kBadRequest},
      {R"({"id":1,"op":"all","table":"t","after":5})", StatusCode::kBadRequest},
      {R"({"id":1,"op":"login","user":"u","secret":7})", StatusCode::kBadRequest},
      {R"({"id":1,"op":"echo"})", StatusCode::kBadRequest},
  };
  for (const Case& c : cases) {
    Result<Request> r = Decode(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), c.code) << c.text << ": " << r.status();
  }
}

TEST(ProtocolTest, PathLongerThanTheDepthLimitIsTooLarge) {
  doc::Limits limits;
  limits.max_depth = 4;
  std::optional<uint64_t> id;
  Result<Request> r = DecodeRequest(
      R"({"id":1,"op":"add","table":"t","key":"k","path":["a","b","c","d"],"delta":1})", limits,
      &id);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooLarge);
}

TEST(ProtocolTest, EncodesReplies) {
  EXPECT_EQ(EncodeOk(3), R"({"id":3,"ok":true})");
  EXPECT_EQ(EncodeOk(3, {{"found", true}}), R"({"id":3,"ok":true,"found":true})");
  EXPECT_EQ(EncodeOkRaw(4, "data", "[1]"), R"({"id":4,"ok":true,"data":[1]})");
  EXPECT_EQ(EncodeError(5, Forbidden("no \"x\"")),
            R"({"id":5,"ok":false,"error":{"code":"forbidden","message":"no \"x\""}})");
  EXPECT_EQ(EncodeError(std::nullopt, BadRequest("m")),
            R"({"id":null,"ok":false,"error":{"code":"bad_request","message":"m"}})");
}

}  // namespace
}  // namespace skiff::server::internal

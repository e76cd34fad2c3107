// One table of bad requests: each gets the right error code and a message
// saying what was wrong, the connection stays usable where the protocol
// allows, stored data does not change, and the server keeps serving.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test/server/raw_socket.h"
#include "test/server/server_fixture.h"
#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using doc::Value;

enum class Login { kNone, kAlice, kBob };

struct BadCase {
  const char* name;
  std::string frame;
  bool binary = false;
  Login login = Login::kAlice;
  const char* code;
  const char* message_part;  // the message must mention this
  bool stays_open = true;
  bool id_known = true;  // whether the error reply can carry id 7
};

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

constexpr size_t kFrameLimit = 8192;

std::vector<BadCase> Cases() {
  const std::string set = R"({"id":7,"op":"set","table":"t","key":"seed","value":)";
  const std::string add = R"({"id":7,"op":"add","table":"t","key":"seed",)";
  return {
      {"malformed_json", R"({"id":7,"op":"get",)", false, Login::kAlice, "bad_request", "", true,
       false},
      {"not_an_object", "[1,2,3]", false, Login::kAlice, "bad_request", "object", true, false},
      {"binary_frame", "\x01\x02", true, Login::kAlice, "bad_request", "binary", true, false},
      {"oversized_frame", set + "\"" + std::string(kFrameLimit, 'x') + "\"}", false, Login::kAlice,
       "too_large", "limit", false, false},
      {"deep_nesting", set + Nested(200) + "}", false, Login::kAlice, "too_large", "", true, false},
      // A text frame of invalid UTF-8 never reaches the server: the WebSocket
      // layer fails the connection (1007, RFC 6455 section 8.1) and no SDK
      // can send one. Invalid UTF-8 can still arrive as a JSON escape.
      {"invalid_utf8_escape", set + R"("\ud800"})", false, Login::kAlice, "bad_request",
       "surrogate", true, false},
      {"missing_id", R"({"op":"ping"})", false, Login::kAlice, "bad_request", "id", true, false},
      {"negative_id", R"({"id":-1,"op":"ping"})", false, Login::kAlice, "bad_request", "id", true,
       false},
      {"unknown_op", R"({"id":7,"op":"explode"})", false, Login::kAlice, "bad_request",
       "unknown op", true},
      {"op_not_string", R"({"id":7,"op":5})", false, Login::kAlice, "bad_request", "op", true},
      {"missing_key", R"({"id":7,"op":"set","table":"t","value":1})", false, Login::kAlice,
       "bad_request", "key", true},
      {"missing_value", R"({"id":7,"op":"set","table":"t","key":"seed"})", false, Login::kAlice,
       "bad_request", "value", true},
      {"table_not_string", R"({"id":7,"op":"get","table":5,"key":"seed"})", false, Login::kAlice,
       "bad_request", "table", true},
      {"add_through_non_object", add + R"("path":["s","x"],"delta":1})", false, Login::kAlice,
       "type_mismatch", "", true},
      {"add_onto_non_number", add + R"("path":["s"],"delta":1})", false, Login::kAlice,
       "type_mismatch", "", true},
      {"add_delta_not_number", add + R"("path":["n"],"delta":"1"})", false, Login::kAlice,
       "bad_request", "delta", true},
      {"add_path_not_strings", add + R"("path":[1],"delta":1})", false, Login::kAlice,
       "bad_request", "path", true},
      {"bad_table_name", R"({"id":7,"op":"set","table":"a b","key":"k","value":1})", false,
       Login::kAlice, "bad_request", "table", true},
      {"system_table", R"({"id":7,"op":"get","table":"$users","key":"alice"})", false,
       Login::kAlice, "bad_request", "table", true},
      {"key_over_1KiB",
       R"({"id":7,"op":"set","table":"t","key":")" + std::string(1025, 'k') + R"(","value":1})",
       false, Login::kAlice, "too_large", "key", true},
      {"empty_key", R"({"id":7,"op":"get","table":"t","key":""})", false, Login::kAlice,
       "bad_request", "key", true},
      {"limit_zero", R"({"id":7,"op":"all","table":"t","limit":0})", false, Login::kAlice,
       "bad_request", "limit", true},
      {"limit_too_big", R"({"id":7,"op":"all","table":"t","limit":10001})", false, Login::kAlice,
       "bad_request", "limit", true},
      {"get_before_login", R"({"id":7,"op":"get","table":"t","key":"seed"})", false, Login::kNone,
       "unauthorized", "logged-in", true},
      {"set_before_login", set + "1}", false, Login::kNone, "unauthorized", "logged-in", true},
      {"wrong_secret", R"({"id":7,"op":"login","user":"alice","secret":"nope"})", false,
       Login::kNone, "unauthorized", "secret", true},
      {"unknown_user", R"({"id":7,"op":"login","user":"mallory","secret":"x"})", false,
       Login::kNone, "unauthorized", "secret", true},
      {"second_login", R"({"id":7,"op":"login","user":"alice","secret":"x"})", false, Login::kAlice,
       "bad_request", "already logged in", true},
      {"other_users_table_read", R"({"id":7,"op":"get","table":"t","key":"seed"})", false,
       Login::kBob, "forbidden", "read", true},
      {"other_users_table_write", set + "1}", false, Login::kBob, "forbidden", "write", true},
  };
}

class BadInputTest : public ServerFixture {
 protected:
  void SetUp() override {
    ServerFixture::SetUp();
    StopServer();
    options_.max_frame_bytes = kFrameLimit;
    StartServer();
    Result<std::string> bob =
        server::CreateUser(*store_, "bob", server::Permissions({"bobs"}, {"bobs"}));
    ASSERT_OK(bob);
    bob_secret_ = *bob;
    ASSERT_OK(Alice().Set("t", "seed", {{"n", 1}, {"s", "x"}}));
  }

  std::string bob_secret_;
};

TEST_F(BadInputTest, EveryBadRequestGetsTheRightError) {
  for (const BadCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    RawSocket raw(server_->port());
    ASSERT_TRUE(raw.WaitOpen());
    if (c.login != Login::kNone) {
      bool alice = c.login == Login::kAlice;
      Value login = {{"id", 1},
                     {"op", "login"},
                     {"user", alice ? "alice" : "bob"},
                     {"secret", alice ? alice_secret_ : bob_secret_}};
      auto reply = raw.Exchange(login.dump());
      ASSERT_TRUE(reply && (*reply)["ok"] == true) << (reply ? reply->dump() : "no reply");
    }
    if (c.binary) {
      raw.SendBinary(c.frame);
    } else {
      raw.SendText(c.frame);
    }
    std::optional<Value> reply = raw.Next();
    ASSERT_TRUE(reply.has_value()) << "no reply";
    ASSERT_TRUE(reply->is_object()) << reply->dump();
    EXPECT_EQ((*reply)["ok"], false) << reply->dump();
    EXPECT_EQ((*reply)["error"]["code"], c.code) << reply->dump();
    std::string message = (*reply)["error"].value("message", "");
    EXPECT_FALSE(message.empty());
    EXPECT_NE(message.find(c.message_part), std::string::npos) << message;
    if (c.id_known) {
      EXPECT_EQ((*reply)["id"], 7);
    } else {
      EXPECT_TRUE((*reply)["id"].is_null()) << reply->dump();
    }
    if (c.stays_open) {
      auto pong = raw.Exchange(R"({"id":8,"op":"ping"})");
      ASSERT_TRUE(pong.has_value()) << "connection stopped answering";
      EXPECT_EQ((*pong)["id"], 8);
      EXPECT_EQ((*pong)["ok"], true);
    } else {
      EXPECT_TRUE(raw.WaitClosed());
    }
  }
  // Nothing stored changed, and the server still serves new connections.
  auto seed = store_->Get("t", "seed");
  ASSERT_OK(seed);
  ASSERT_TRUE(seed->has_value());
  EXPECT_EQ(Value::parse(**seed), (Value{{"n", 1}, {"s", "x"}}));
  auto page = store_->Scan("t", "", 100);
  ASSERT_OK(page);
  EXPECT_EQ(page->items.size(), 1u);
  EXPECT_OK(Alice().Ping());
}

// Mangled versions of valid requests (bytes flipped, cut short, spliced),
// from a fixed seed: every frame gets exactly one reply and the server
// keeps serving.
TEST_F(BadInputTest, MangledFramesEachGetOneReply) {
  const std::vector<std::string> seeds = {
      R"({"id":1,"op":"set","table":"fz","key":"a","value":{"x":[1,2,{"y":null}]}})",
      R"({"id":2,"op":"add","table":"fz","key":"n","path":["a","b"],"delta":1.5})",
      R"({"id":3,"op":"merge","table":"fz","key":"m","patch":{"a":null,"b":{"c":1}}})",
      R"({"id":4,"op":"all","table":"fz","after":"a","limit":5})",
      R"({"id":5,"op":"get","table":"fz","key":"a"})",
  };
  RawSocket raw(server_->port());
  ASSERT_TRUE(raw.WaitOpen());
  Value login = {{"id", 0}, {"op", "login"}, {"user", "alice"}, {"secret", alice_secret_}};
  ASSERT_EQ((*raw.Exchange(login.dump()))["ok"], true);
  uint64_t state = 0x5eed;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 33);
  };
  const char kBytes[] = "{}[]\":,0123456789.-eE+ntrufals\\ xyz";
  int sent = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string frame = seeds[next() % seeds.size()];
    switch (next() % 4) {
      case 0:  // overwrite a byte with JSON punctuation or a letter
        frame[next() % frame.size()] = kBytes[next() % (sizeof kBytes - 1)];
        break;
      case 1:  // cut short
        frame.resize(next() % frame.size());
        break;
      case 2:  // splice two requests
        frame = frame.substr(0, next() % frame.size()) + seeds[next() % seeds.size()];
        break;
      default:  // duplicate a slice
        frame.insert(next() % frame.size(), frame.substr(0, next() % frame.size()));
        break;
    }
    raw.SendText(frame);
    ++sent;
  }
  for (int i = 0; i < sent; ++i) {
    std::optional<Value> reply = raw.Next();
    ASSERT_TRUE(reply.has_value()) << "reply " << i << " of " << sent << " missing";
    ASSERT_TRUE(reply->is_object() && reply->contains("ok")) << reply->dump();
  }
  auto pong = raw.Exchange(R"({"id":9,"op":"ping"})");
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ((*pong)["ok"], true);
  EXPECT_EQ(**Alice().Get("t", "seed"), (Value{{"n", 1}, {"s", "x"}}));
}

TEST_F(BadInputTest, PermissionsConfineAUserToTheirTables) {
  client::Client& bob = Connect(ClientOptionsFor("bob", bob_secret_));
  EXPECT_OK(bob.Set("bobs", "k", 1));
  EXPECT_EQ(**bob.Get("bobs", "k"), 1);
  EXPECT_EQ(bob.Get("t", "seed").status().code(), StatusCode::kForbidden);
  EXPECT_EQ(bob.All("t").status().code(), StatusCode::kForbidden);
  EXPECT_EQ(bob.Add("t", "seed", {"n"}, 1).status().code(), StatusCode::kForbidden);
  EXPECT_EQ(bob.Merge("t", "seed", {{"n", 2}}).code(), StatusCode::kForbidden);
  EXPECT_EQ(bob.Delete("t", "seed").status().code(), StatusCode::kForbidden);
  EXPECT_EQ(**Alice().Get("t", "seed"), (Value{{"n", 1}, {"s", "x"}}));
}

TEST_F(BadInputTest, WrongCredentialsFailConnect) {
  client::ClientOptions o = ClientOptionsFor("alice", "wrong");
  auto c = client::Client::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnauthorized);
}

}  // namespace
}  // namespace skiff::testing

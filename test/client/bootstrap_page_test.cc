// The device's tree-free reader of bootstrap replies: it takes every row,
// its value as the text sent, the cursor and the next page's start; it
// refuses malformed JSON and replies of the wrong shape instead of guessing;
// and it reads exactly what the server's encoder writes.
#include "client/internal/bootstrap_page.h"

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/internal/json_reader.h"
#include "doc/document.h"
#include "server/internal/wire/sync_replies.h"

#include "test/status_matchers.h"

namespace skiff::client::internal {
namespace {

TEST(JsonReaderTest, ReadsStringsWithEveryEscape) {
  JsonReader in(R"( "a\"b\\c\/d\b\f\n\r\t\u00e9\u20ac\ud83d\ude00" )");
  std::string s;
  ASSERT_TRUE(in.String(&s));
  EXPECT_EQ(s, "a\"b\\c/d\b\f\n\r\t\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  EXPECT_TRUE(in.AtEnd());
}

TEST(JsonReaderTest, SkipsValuesAndReturnsTheirText) {
  JsonReader in(R"([ {"a":[1,-2.5e+3,true,false,null,{}],"b":"x"} , [] ])");
  bool done = false;
  ASSERT_TRUE(in.BeginArray());
  ASSERT_TRUE(in.NextElement(&done));
  ASSERT_FALSE(done);
  std::string_view span;
  ASSERT_TRUE(in.Skip(&span));
  EXPECT_EQ(span, R"({"a":[1,-2.5e+3,true,false,null,{}],"b":"x"})");
  ASSERT_TRUE(in.NextElement(&done));
  ASSERT_FALSE(done);
  ASSERT_TRUE(in.Skip(&span));
  EXPECT_EQ(span, "[]");
  ASSERT_TRUE(in.NextElement(&done));
  EXPECT_TRUE(done);
  EXPECT_TRUE(in.AtEnd());
}

TEST(JsonReaderTest, RefusesWhatIsNotJson) {
  for (const char* bad :
       {"",         "{",     "[1,]",      "[1 2]",     "{\"a\"}",     "{\"a\":1,}",
        "{a:1}",    "01",    "1.",        "-",         "1e",          "tru",
        "nul",      "\"abc", "\"\\x\"",   "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",
        "\"a\nb\"", "[[[[",  "{\"a\":[}]"}) {
    JsonReader in(bad);
    std::string_view span;
    EXPECT_FALSE(in.Skip(&span) && in.AtEnd()) << bad;
  }
  std::string deep(1000, '[');
  deep += std::string(1000, ']');
  JsonReader in(deep);
  EXPECT_FALSE(in.Skip());  // refused, not a stack overflow
}

// Strings are scanned 16 and 8 bytes at a time: a quote, a backslash or a
// control character must stop the scan at every length and offset, and bytes
// at or above 0x80 (UTF-8) and 0x20..0x7F must not.
TEST(JsonReaderTest, FindsEveryStopByteAtEveryOffset) {
  for (size_t length = 0; length <= 40; ++length) {
    std::string plain;
    for (size_t i = 0; i < length; ++i) plain += "a\x7f\xc3\xa9 ~"[i % 6];
    std::string s;
    const std::string quoted = "\"" + plain + "\"";
    JsonReader whole(quoted);
    ASSERT_TRUE(whole.String(&s)) << length;
    EXPECT_EQ(s, plain);
    for (size_t at = 0; at < length; ++at) {
      std::string escaped = plain;
      escaped.replace(at, 1, "\\n");
      std::string_view view;
      const std::string escaped_text = "\"" + escaped + "\"";
      JsonReader with_escape(escaped_text);
      ASSERT_TRUE(with_escape.String(&view)) << length << " " << at;
      std::string expected = plain;
      expected[at] = '\n';
      EXPECT_EQ(view, expected) << length << " " << at;
      std::string control = plain;
      control[at] = '\x1f';
      EXPECT_FALSE(JsonReader("\"" + control + "\"").String(&s)) << length << " " << at;
      std::string early = plain;
      early[at] = '"';
      const std::string early_text = "\"" + early + "\"";
      JsonReader cut(early_text);
      ASSERT_TRUE(cut.String(&view));
      EXPECT_EQ(view, plain.substr(0, at));
    }
  }
}

TEST(JsonReaderTest, GivesMemberNamesAsViews) {
  JsonReader in(R"({"plain":1,"e\u0073caped":2})");
  std::string_view name;
  bool done = false;
  ASSERT_TRUE(in.BeginObject());
  ASSERT_TRUE(in.NextMember(&name, &done));
  EXPECT_EQ(name, "plain");
  ASSERT_TRUE(in.Skip());
  ASSERT_TRUE(in.NextMember(&name, &done));
  EXPECT_EQ(name, "escaped");
  ASSERT_TRUE(in.Skip());
  ASSERT_TRUE(in.NextMember(&name, &done));
  EXPECT_TRUE(done);
}

TEST(JsonReaderTest, ReadsUnsignedIntegersOnly) {
  uint64_t v = 0;
  EXPECT_TRUE(JsonReader("18446744073709551615").Unsigned(&v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(JsonReader("18446744073709551616").Unsigned(&v));
  EXPECT_FALSE(JsonReader("-1").Unsigned(&v));
  EXPECT_FALSE(JsonReader("1.5").Unsigned(&v));
  EXPECT_FALSE(JsonReader("1e3").Unsigned(&v));
}

TEST(BootstrapPageTest, ReadsRowsCursorAndNext) {
  auto page = ReadBootstrapPage(
      R"({"id":3,"ok":true,"rows":[{"group":"g","table":"t","key":"a","value":{"x":[1,"]"]},"sync_id":4},)"
      R"({"sync_id":9,"value":"s","key":"b","table":"t","group":"g","extra":[1]}],)"
      R"("cursor":12,"next":["g","t","b"]})");
  ASSERT_OK(page);
  ASSERT_EQ(page->rows.size(), 2u);
  EXPECT_EQ(page->rows[0].name, (RowName{"g", "t", "a"}));
  EXPECT_EQ(page->rows[0].value, R"({"x":[1,"]"]})");
  EXPECT_EQ(page->rows[1].name, (RowName{"g", "t", "b"}));
  EXPECT_EQ(page->rows[1].value, "\"s\"");
  EXPECT_EQ(page->cursor, 12u);
  EXPECT_EQ(page->next, (RowName{"g", "t", "b"}));

  auto last = ReadBootstrapPage(R"({"id":4,"ok":true,"rows":[],"cursor":12,"next":null})");
  ASSERT_OK(last);
  EXPECT_TRUE(last->rows.empty());
  EXPECT_FALSE(last->next.has_value());
}

TEST(BootstrapPageTest, GivesTheNextPageBeforeTheRowsWhenTheReplyDoes) {
  std::vector<std::optional<RowName>> seen;
  auto record = [&](const std::optional<RowName>& next) { seen.push_back(next); };
  // As the server writes it: the next page's `after` ahead of the rows.
  auto page =
      ReadBootstrapPage(R"({"id":3,"ok":true,"cursor":12,"next":["g","t","b"],)"
                        R"("rows":[{"group":"g","table":"t","key":"b","value":1,"sync_id":4}]})",
                        record);
  ASSERT_OK(page);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (RowName{"g", "t", "b"}));
  EXPECT_EQ(page->next, (RowName{"g", "t", "b"}));
  EXPECT_EQ(page->rows.size(), 1u);

  seen.clear();
  ASSERT_OK(ReadBootstrapPage(R"({"id":4,"ok":true,"cursor":12,"next":null,"rows":[]})", record));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_FALSE(seen[0].has_value());

  // Rows first: the caller learns `next` from the page only.
  seen.clear();
  ASSERT_OK(ReadBootstrapPage(R"({"id":5,"ok":true,"rows":[],"cursor":12,"next":["g","t","c"]})",
                              record));
  EXPECT_TRUE(seen.empty());
}

TEST(BootstrapPageTest, RefusesMalformedReplies) {
  for (
      const char* bad : {
          R"({"id":1,"ok":true,"cursor":1,"next":null})",  // no rows
          R"({"id":1,"ok":true,"rows":[],"next":null})",   // no cursor
          R"({"id":1,"ok":true,"rows":{},"cursor":1})",
          R"({"id":1,"ok":true,"rows":[{"group":"g","table":"t","value":1}],"cursor":1})",
          R"({"id":1,"ok":true,"rows":[{"group":"g","table":"t","key":"k"}],"cursor":1})",
          R"({"id":1,"ok":true,"rows":[{"group":1,"table":"t","key":"k","value":1}],"cursor":1})",
          R"({"id":1,"ok":true,"rows":[{"group":"g","table":"t","key":"k","value":[1,}],"cursor":1})",
          R"({"id":1,"ok":true,"rows":[],"cursor":-1})",
          R"({"id":1,"ok":true,"rows":[],"cursor":1,"next":["g","t"]})",
          R"({"id":1,"ok":true,"rows":[],"cursor":1} trailing)",
          R"({"id":1,"ok":true,"rows":[],"cursor":1})",  // no next: not even the last page
          R"({"id":1,"ok":true,"cursor":1,"next":null,"next":null,"rows":[]})",  // next twice
      }) {
    EXPECT_FALSE(ReadBootstrapPage(bad).ok()) << bad;
  }
}

// What the server writes is what the device reads, names that need
// escaping and values of every kind included.
TEST(BootstrapPageTest, ReadsWhatTheServerEncodes) {
  sync::BootstrapReply reply;
  reply.cursor = 77;
  const std::vector<std::string> values = {R"({"a":"q\"uote","b":[1,2.5,null]})", "\"caf\xC3\xA9\"",
                                           "true", "-3"};
  const std::vector<std::string> keys = {"plain", "q\"uote\\back", "caf\xC3\xA9", "tab\there"};
  for (size_t i = 0; i < keys.size(); ++i) {
    reply.rows.push_back(store::SyncRow{"grp", "tbl", keys[i], values[i], i + 1});
  }
  reply.next = store::SyncRowCursor{"grp", "tbl", keys.back()};
  const std::string text = server::internal::EncodeBootstrapReply(5, reply);
  ASSERT_TRUE(doc::Value::accept(text)) << text;
  // The server gives `next` ahead of the rows, so the device can ask for
  // the following page first.
  int told_next = 0;
  auto page = ReadBootstrapPage(text, [&](const std::optional<RowName>& next) {
    ++told_next;
    EXPECT_EQ(next, (RowName{"grp", "tbl", keys.back()}));
  });
  ASSERT_OK(page);
  EXPECT_EQ(told_next, 1);
  ASSERT_EQ(page->rows.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(page->rows[i].name, (RowName{"grp", "tbl", keys[i]}));
    EXPECT_EQ(page->rows[i].value, values[i]);
  }
  EXPECT_EQ(page->cursor, 77u);
  EXPECT_EQ(page->next, (RowName{"grp", "tbl", keys.back()}));
}

}  // namespace
}  // namespace skiff::client::internal

// How one near's shares are asked for and merged (cluster/near_gather.h):
// the share request, the partition set's text, and the merge's verdicts.
#include "server/cluster/near_gather.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/cluster/relay_frame.h"
#include "server/internal/wire/near_reply.h"

namespace skiff::server::cluster {
namespace {

using Outcome = PeerLinks::Outcome;

// A share's answer as a peer writes it; with `docs`, one document per hit.
std::string Share(const std::vector<geo::GeoHit>& hits,
                  const std::vector<std::string>* docs = nullptr) {
  internal::NearValues values;
  for (const std::string& d : docs ? *docs : std::vector<std::string>{}) {
    values.text += d;
    values.ends.push_back(values.text.size());
  }
  return internal::EncodeNearReply(7, hits, docs ? &values : nullptr, true);
}

TEST(PartitionSetTest, TextRoundTrips) {
  PartitionSet set;
  for (uint32_t p : {0u, 1u, 5u, 511u, kPartitions - 1}) set.set(p);
  const std::string text = PartitionSetText(set);
  EXPECT_EQ(text.size(), kPartitions / 4);
  EXPECT_EQ(text.substr(0, 2), "32");  // partitions 0, 1 | 5
  EXPECT_EQ(ParsePartitionSet(text), set);
  EXPECT_FALSE(ParsePartitionSet(text.substr(1)).has_value());
  EXPECT_FALSE(ParsePartitionSet(std::string(kPartitions / 4, 'G')).has_value());
  EXPECT_FALSE(ParsePartitionSet(std::string(kPartitions / 4, 'A')).has_value());
}

TEST(NearShareRequestTest, AsksForColumnsAndNamesThePartitions) {
  PartitionSet set;
  set.set(3);
  const std::optional<std::string> text = NearShareRequest(
      R"({"id":5,"op":"near","table":"t","lat":1,"lon":2,"columns":false,"partitions":"x"})", set);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(MemberText(*text, "columns"), "true");
  EXPECT_EQ(MemberText(*text, "partitions"), "\"" + PartitionSetText(set) + "\"");
  EXPECT_EQ(MemberText(*text, "lat"), "1");
  EXPECT_EQ(IdOf(*text), 0u);
  EXPECT_FALSE(NearShareRequest("[1]", set).has_value());
}

TEST(NearGatherTest, MergesTheNearestOfEveryShareByDistanceThenKey) {
  NearGather gather(3, 4, /*values=*/true);
  const std::vector<std::string> first = {"1", "4"}, none, third = {"3", "2", "5"};
  EXPECT_FALSE(gather.Add(Outcome::kReplied, Share({{"a", 10}, {"d", 40}}, &first)));
  EXPECT_FALSE(gather.Add(Outcome::kReplied, Share({}, &none)));
  EXPECT_TRUE(gather.Add(Outcome::kReplied, Share({{"c", 10}, {"b", 20}, {"e", 50}}, &third)));
  ASSERT_EQ(gather.verdict(), NearGather::Verdict::kAnswered);
  std::vector<geo::GeoHit> hits;
  internal::NearValues docs;
  gather.Merged(&hits, &docs);
  std::vector<std::string> keys, values;
  for (size_t i = 0; i < hits.size(); ++i) {
    keys.push_back(hits[i].key);
    values.push_back(std::string(docs.at(i)));
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "c", "b", "d"}));
  EXPECT_EQ(values, (std::vector<std::string>{"1", "3", "2", "4"}));
  EXPECT_EQ(hits[2].dist_um, 20);
}

TEST(NearGatherTest, AMovedOrLostShareAsksAgain) {
  for (const Outcome outcome : {Outcome::kNotSent, Outcome::kLost}) {
    NearGather gather(2, 10, false);
    gather.Add(Outcome::kReplied, Share({{"a", 1}}));
    EXPECT_TRUE(gather.Add(outcome, ""));
    EXPECT_EQ(gather.verdict(), NearGather::Verdict::kAgain);
  }
  NearGather moved(2, 10, false);
  moved.Add(Outcome::kReplied, R"({"id":1,"ok":false,"error":{"code":"moved","message":"m"}})");
  moved.Add(Outcome::kReplied, Share({{"a", 1}}));
  EXPECT_EQ(moved.verdict(), NearGather::Verdict::kAgain);
  // An answer that cannot be read is asked again too, not passed on.
  NearGather garbled(1, 10, false);
  garbled.Add(Outcome::kReplied, R"({"id":1,"ok":true,"keys":[1]})");
  EXPECT_EQ(garbled.verdict(), NearGather::Verdict::kAgain);
}

TEST(NearGatherTest, AnOwnersRefusalIsPassedOn) {
  const std::string refusal =
      R"({"id":4,"ok":false,"error":{"code":"bad_request","message":"lat must be within [-90, 90]"}})";
  NearGather gather(2, 10, false);
  gather.Add(Outcome::kReplied, refusal);
  gather.Add(Outcome::kReplied, refusal);
  ASSERT_EQ(gather.verdict(), NearGather::Verdict::kRefused);
  EXPECT_EQ(gather.refusal(), refusal);
}

}  // namespace
}  // namespace skiff::server::cluster

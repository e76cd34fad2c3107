// skiffd at scale, as a child process so each side has its own descriptor
// limit: 10,000 connections opened at once are all accepted and each is
// served; and when skiffd runs out of descriptors, the connections past the
// limit are refused with an HTTP 503 in words (not left hanging), the episode
// is counted once, the connections already open go on working, and new ones
// are taken again once some close.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "doc/document.h"
#include "server/users.h"
#include "store/store.h"
#include "support/skiffd_process.h"
#include "support/temp_dir.h"
#include "support/ws_fleet.h"

#include "test/status_matchers.h"

namespace skiff::testing {
namespace {

using bench::Fleet;
using bench::FleetOpenReport;
using doc::Value;
using std::chrono::seconds;

class ConnectionsScaleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string url = "sqlite:" + dir_.File("scale.db");
    auto store = store::OpenStore(url);
    ASSERT_OK(store);
    auto secret = server::CreateUser(**store, "alice", server::Permissions({"*"}, {"*"}));
    ASSERT_OK(secret);
    secret_ = *secret;
    url_ = url;
  }

  void StartSkiffd(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> flags = {"--store", url_};
    flags.insert(flags.end(), extra.begin(), extra.end());
    ASSERT_OK(skiffd_.Start(SKIFFD_PATH, flags));
  }

  std::string Login(uint64_t id) const {
    return Value{{"id", id}, {"op", "login"}, {"user", "alice"}, {"secret", secret_}}.dump();
  }

  support::TempDir dir_;
  std::string url_;
  std::string secret_;
  support::SkiffdProcess skiffd_;
};

TEST_F(ConnectionsScaleTest, TenThousandConnectionsAreAcceptedAndServed) {
  constexpr size_t kConnections = 10000;
  const uint64_t limit = bench::RaiseDescriptorLimit();
  if (limit < kConnections + 256) {
    GTEST_SKIP() << "*** needs " << kConnections + 256 << " descriptors per process; the hard "
                 << "limit here is " << limit << " ***";
  }
  StartSkiffd();
  size_t answered = 0, wrong = 0;
  Fleet fleet([&](size_t i, std::string_view payload) {
    ++answered;
    if (payload !=
        R"({"id":)" + std::to_string(i) + R"(,"ok":true,"data":)" + std::to_string(i) + "}") {
      ++wrong;
    }
  });
  FleetOpenReport opened = fleet.Open(skiffd_.port(), kConnections, std::chrono::seconds(120));
  ASSERT_EQ(opened.opened, kConnections) << opened.first_error;
  for (size_t i = 0; i < kConnections; ++i) {
    ASSERT_TRUE(fleet.Send(
        i, R"({"id":)" + std::to_string(i) + R"(,"op":"echo","data":)" + std::to_string(i) + "}"));
  }
  ASSERT_TRUE(fleet.RunUntil([&] { return answered >= kConnections; }, seconds(120)));
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(fleet.lost(), 0u);
  EXPECT_EQ(fleet.open(), kConnections);
  fleet.CloseAll(std::chrono::milliseconds(30000));
  EXPECT_OK(skiffd_.Stop());
}

TEST_F(ConnectionsScaleTest, RunningOutOfDescriptorsRefusesInWordsAndRecovers) {
#ifdef __SANITIZE_ADDRESS__
  // The asan preset's UBSan needs descriptors of its own: its vptr check asks
  // whether memory is readable by writing it to a pipe, finds no descriptor
  // for the pipe, reports a bad vptr and stops skiffd. Out of descriptors is
  // this test's whole point, so it does not run under that preset.
  GTEST_SKIP() << "not under the asan preset: UBSan needs descriptors skiffd has run out of";
#endif
  StartSkiffd();
  // An observer connection, open before the limit is lowered.
  Value stats;
  size_t replies = 0;
  Fleet observer([&](size_t, std::string_view payload) {
    stats = Value::parse(payload, nullptr, false);
    ++replies;
  });
  ASSERT_EQ(observer.Open(skiffd_.port(), 1, seconds(30)).opened, 1u);
  observer.Send(0, Login(1));
  ASSERT_TRUE(observer.RunUntil([&] { return replies >= 1; }, seconds(30)));
  // Lower skiffd's own descriptor limit below what it already counted on:
  // its connection limit (from the limit at start) no longer protects it,
  // so accept itself runs out.
  size_t open_fds = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(skiffd_.pid()) + "/fd")) {
    (void)entry;
    ++open_fds;
  }
  rlimit lowered{};
  ASSERT_EQ(prlimit(skiffd_.pid(), RLIMIT_NOFILE, nullptr, &lowered), 0);
  lowered.rlim_cur = open_fds + 20;
  ASSERT_EQ(prlimit(skiffd_.pid(), RLIMIT_NOFILE, &lowered, nullptr), 0);

  Fleet fleet([](size_t, std::string_view) {});
  FleetOpenReport opened = fleet.Open(skiffd_.port(), 60, seconds(60));
  EXPECT_GT(opened.opened, 0u);
  EXPECT_LT(opened.opened, 60u);
  EXPECT_EQ(opened.opened + opened.failed, 60u);
  // Refused in words, not left hanging until a timeout.
  EXPECT_NE(opened.first_error.find("503"), std::string::npos) << opened.first_error;
  // The connection already open is still served, and counted the episode once.
  replies = 0;
  observer.Send(0, R"({"id":2,"op":"stats"})");
  ASSERT_TRUE(observer.RunUntil([&] { return replies >= 1; }, seconds(30)));
  EXPECT_EQ(stats["network"]["descriptor_exhaustion"], 1) << stats.dump();
  EXPECT_GE(stats["network"]["refused"], 1) << stats.dump();
  // Once some close, new connections are taken again.
  fleet.CloseAll(std::chrono::milliseconds(30000));
  bool reopened = false;
  for (int attempt = 0; attempt < 100 && !reopened; ++attempt) {
    Fleet again([](size_t, std::string_view) {});
    reopened = again.Open(skiffd_.port(), 5, seconds(30)).opened == 5;
  }
  EXPECT_TRUE(reopened);
  observer.CloseAll(std::chrono::milliseconds(30000));
  EXPECT_OK(skiffd_.Stop());
}

}  // namespace
}  // namespace skiff::testing

// The /proc/net/netstat reader the accept-storm cases use to tell whether
// the kernel dropped connections at a full listen queue.
#include "support/listen_queue.h"

#include <string>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace skiff::support {
namespace {

// Captured from /proc/net/netstat on Linux 6.18 after a storm of 1,000
// connections against a listener with a backlog of 511 (324 dropped), cut
// to the first columns of each pair of lines.
const std::string kSample =
    "TcpExt: SyncookiesSent SyncookiesRecv SyncookiesFailed EmbryonicRsts PruneCalled RcvPruned "
    "OfoPruned OutOfWindowIcmps LockDroppedIcmps ArpFilter TW TWRecycled TWKilled PAWSActive "
    "PAWSEstab BeyondWindow TSEcrRejected PAWSOldAck PAWSTimewait DelayedACKs DelayedACKLocked "
    "DelayedACKLost ListenOverflows ListenDrops TCPHPHits TCPPureAcks\n"
    "TcpExt: 487 487 0 0 0 0 0 0 0 0 3011 0 0 0 0 0 0 0 0 2646 0 4 324 324 5 7200\n"
    "IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts "
    "InOctets OutOctets\n"
    "IpExt: 0 0 0 0 0 0 212686842 1194822\n";

TEST(ListenQueueTest, ReadsTheTcpExtCounters) {
  const std::optional<ListenOverflowCounts> counts = ParseListenOverflows(kSample);
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(counts->overflows, 324u);
  EXPECT_EQ(counts->drops, 324u);
}

TEST(ListenQueueTest, FindsTcpExtAfterOtherSections) {
  const std::string moved =
      kSample.substr(kSample.find("IpExt:")) + kSample.substr(0, kSample.find("IpExt:"));
  const std::optional<ListenOverflowCounts> counts = ParseListenOverflows(moved);
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(counts->overflows, 324u);
}

TEST(ListenQueueTest, RefusesTextWithoutTheCounters) {
  EXPECT_FALSE(ParseListenOverflows("").has_value());
  EXPECT_FALSE(ParseListenOverflows("IpExt: InNoRoutes\nIpExt: 0\n").has_value());
  EXPECT_FALSE(ParseListenOverflows("TcpExt: TW ListenOverflows\nTcpExt: 1 2\n").has_value());
}

TEST(ListenQueueTest, RefusesValuesThatDoNotLineUp) {
  EXPECT_FALSE(
      ParseListenOverflows("TcpExt: ListenOverflows ListenDrops\nTcpExt: 3\n").has_value());
  EXPECT_FALSE(
      ParseListenOverflows("TcpExt: ListenOverflows ListenDrops\nTcpExt: 3 x\n").has_value());
  EXPECT_FALSE(ParseListenOverflows("TcpExt: ListenOverflows ListenDrops\n").has_value());
}

TEST(ListenQueueTest, RiseIsTheLargerOfTheTwo) {
  const ListenOverflowCounts before{10, 12};
  EXPECT_EQ((ListenOverflowCounts{10, 12}.RiseSince(before)), 0u);
  EXPECT_EQ((ListenOverflowCounts{15, 17}.RiseSince(before)), 5u);
  EXPECT_EQ((ListenOverflowCounts{10, 14}.RiseSince(before)), 2u);
  // A counter that went back (a new network namespace) is no rise.
  EXPECT_EQ((ListenOverflowCounts{0, 0}.RiseSince(before)), 0u);
}

// The backlog the kernel gave a listening socket, as `ss -ltn` shows it.
TEST(ListenQueueTest, ReadsTheBacklogOfAListeningSocket) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 37), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const uint16_t port = ntohs(addr.sin_port);
  EXPECT_EQ(ListenBacklog(port), std::optional<uint32_t>(37));
  ::close(fd);
  EXPECT_EQ(ListenBacklog(port), std::nullopt);
}

}  // namespace
}  // namespace skiff::support

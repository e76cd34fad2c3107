// The kernel's view of TCP listen queues, for the cases that open many
// connections at once (an accept storm).
//
// When a listener's accept queue is full the kernel drops the client's SYN
// (or its final ACK) and counts it in /proc/net/netstat (TcpExt
// ListenOverflows, and ListenDrops, which counts every overflow and a few
// other drops). The client retries a second later, so a storm that
// overflowed measures the retry timer, not the server: such a run must
// fail, not be compared. The counters are the network namespace's, so a
// storm elsewhere in it at the same moment counts too (it fails the case
// rather than passing it).
//
// ListenBacklog tells the backlog a listening socket really got (what
// `ss -ltn` shows as Send-Q), so servers compared side by side can be
// shown to queue alike.
//
// Thread-safe: free functions over /proc and a netlink socket of their own.
#ifndef SKIFF_SUPPORT_LISTEN_QUEUE_H_
#define SKIFF_SUPPORT_LISTEN_QUEUE_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace skiff::support {

struct ListenOverflowCounts {
  uint64_t overflows = 0;  // TcpExt ListenOverflows
  uint64_t drops = 0;      // TcpExt ListenDrops

  // Connections dropped at a listener between `before` and this reading:
  // the larger of the two counters' rises (ListenDrops includes the
  // overflows, and may rise alone).
  uint64_t RiseSince(const ListenOverflowCounts& before) const;
};

// Parses the text of /proc/net/netstat (pairs of "TcpExt: NAME ..." and
// "TcpExt: VALUE ..." lines). nullopt when the TcpExt pair or either
// counter is missing, or a value is not a number.
std::optional<ListenOverflowCounts> ParseListenOverflows(std::string_view netstat);

// The counters now; nullopt when /proc/net/netstat cannot be read or parsed.
std::optional<ListenOverflowCounts> ReadListenOverflows();

// The backlog of the TCP socket listening on IPv4 port `port`, from the
// kernel's socket diagnostics (NETLINK_SOCK_DIAG); nullopt when no such
// socket is found or the query fails.
std::optional<uint32_t> ListenBacklog(uint16_t port);

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_LISTEN_QUEUE_H_

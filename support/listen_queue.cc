#include "support/listen_queue.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace skiff::support {
namespace {

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t at = 0;
  while (at < line.size()) {
    const size_t start = line.find_first_not_of(' ', at);
    if (start == std::string_view::npos) break;
    const size_t end = std::min(line.find(' ', start), line.size());
    words.push_back(line.substr(start, end - start));
    at = end;
  }
  return words;
}

// The next line of `text` from `*at`, without its newline.
std::string_view NextLine(std::string_view text, size_t* at) {
  const size_t end = std::min(text.find('\n', *at), text.size());
  std::string_view line = text.substr(*at, end - *at);
  *at = end + 1;
  return line;
}

// Closes a descriptor at the end of the scope.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

uint64_t ListenOverflowCounts::RiseSince(const ListenOverflowCounts& before) const {
  const uint64_t overflow_rise = overflows >= before.overflows ? overflows - before.overflows : 0;
  const uint64_t drop_rise = drops >= before.drops ? drops - before.drops : 0;
  return std::max(overflow_rise, drop_rise);
}

std::optional<ListenOverflowCounts> ParseListenOverflows(std::string_view netstat) {
  size_t at = 0;
  while (at < netstat.size()) {
    const std::vector<std::string_view> names = Words(NextLine(netstat, &at));
    if (names.empty() || names[0] != "TcpExt:") continue;
    const std::vector<std::string_view> values = Words(NextLine(netstat, &at));
    if (values.size() != names.size() || values[0] != "TcpExt:") return std::nullopt;
    std::optional<uint64_t> overflows, drops;
    for (size_t i = 1; i < names.size(); ++i) {
      std::optional<uint64_t>* slot = names[i] == "ListenOverflows" ? &overflows
                                      : names[i] == "ListenDrops"   ? &drops
                                                                    : nullptr;
      if (slot == nullptr) continue;
      uint64_t v = 0;
      const auto [end, ec] =
          std::from_chars(values[i].data(), values[i].data() + values[i].size(), v);
      if (ec != std::errc() || end != values[i].data() + values[i].size()) return std::nullopt;
      *slot = v;
    }
    if (!overflows || !drops) return std::nullopt;
    return ListenOverflowCounts{*overflows, *drops};
  }
  return std::nullopt;
}

std::optional<ListenOverflowCounts> ReadListenOverflows() {
  std::ifstream in("/proc/net/netstat");
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseListenOverflows(text);
}

std::optional<uint32_t> ListenBacklog(uint16_t port) {
  Fd s{::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)};
  if (s.fd < 0) return std::nullopt;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  message.request.sdiag_family = AF_INET;
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = 1u << TCP_LISTEN;
  if (::send(s.fd, &message, sizeof message, 0) != static_cast<ssize_t>(sizeof message)) {
    return std::nullopt;
  }
  // The dump lists every IPv4 listener; for one in LISTEN the kernel puts
  // its backlog (sk_max_ack_backlog) in idiag_wqueue.
  alignas(nlmsghdr) char buffer[16384];
  for (;;) {
    const ssize_t n = ::recv(s.fd, buffer, sizeof buffer, 0);
    if (n <= 0) return std::nullopt;
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(h, left);
         h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) return std::nullopt;
      const auto* m = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
      if (ntohs(m->id.idiag_sport) == port) return m->idiag_wqueue;
    }
  }
}

}  // namespace skiff::support

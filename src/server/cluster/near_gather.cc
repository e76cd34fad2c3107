#include "server/cluster/near_gather.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "server/cluster/relay_frame.h"

namespace skiff::server::cluster {

std::optional<std::string> NearShareRequest(std::string_view request,
                                            const PartitionSet& partitions) {
  std::optional<std::string> text = WithId(request, 0, {"partitions", "columns"});
  if (!text || text->empty() || text->back() != '}') return std::nullopt;
  text->pop_back();
  *text += ",\"columns\":true,\"partitions\":\"";
  *text += PartitionSetText(partitions);
  *text += "\"}";
  return text;
}

bool NearGather::Add(PeerLinks::Outcome outcome, std::string_view reply) {
  MutexLock lock(&mu_);
  if (outcome != PeerLinks::Outcome::kReplied || IsMovedReply(reply)) {
    // A read: asking again is safe, and the owners may have changed.
    again_ = true;
  } else if (!again_ && refusal_.empty() &&
             !internal::DecodeNearColumns(reply, &hits_, values_ ? &docs_ : nullptr)) {
    // Not an answer: an error every owner gives alike (a bad query, no geo
    // index) goes to the client as it came.
    if (MemberText(reply, "ok") == "false") {
      refusal_ = std::string(reply);
    } else {
      again_ = true;
    }
  }
  return --waiting_ == 0;
}

NearGather::Verdict NearGather::verdict() const {
  MutexLock lock(&mu_);
  if (again_) return Verdict::kAgain;
  return refusal_.empty() ? Verdict::kAnswered : Verdict::kRefused;
}

std::string NearGather::refusal() const {
  MutexLock lock(&mu_);
  return refusal_;
}

void NearGather::Merged(std::vector<geo::GeoHit>* hits, internal::NearValues* values) {
  MutexLock lock(&mu_);
  std::vector<size_t> order(hits_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // The lambda reads through a pointer taken under the lock (the lock
  // analysis does not follow a lock into a lambda).
  const geo::GeoHit* all = hits_.data();
  auto before = [all](size_t a, size_t b) {
    if (all[a].dist_um != all[b].dist_um) return all[a].dist_um < all[b].dist_um;
    return all[a].key < all[b].key;
  };
  const size_t keep = std::min(limit_, order.size());
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(keep), order.end(), before);
  order.resize(keep);
  hits->clear();
  for (const size_t i : order) hits->push_back(std::move(hits_[i]));
  if (values == nullptr || !values_) return;
  values->text.clear();
  values->ends.clear();
  for (const size_t i : order) {
    values->text += docs_.at(i);
    values->ends.push_back(values->text.size());
  }
}

}  // namespace skiff::server::cluster

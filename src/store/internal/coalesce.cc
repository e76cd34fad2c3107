#include "store/internal/coalesce.h"

#include <map>
#include <string_view>
#include <utility>

namespace skiff::store::internal {

CoalescedBatch Coalesce(const WriteBatch& batch) {
  std::map<std::pair<std::string_view, std::string_view>, const WriteBatch::Op*> last;
  for (const WriteBatch::Op& op : batch.ops()) last[{op.table, op.key}] = &op;
  CoalescedBatch out;
  for (const auto& [unused, op] : last) {
    (op->kind == WriteBatch::Op::Kind::kPut ? out.puts : out.deletes).push_back(op);
  }
  for (const WriteBatch::Op& op : batch.ops()) {
    if (last[{op.table, op.key}] != &op) out.folded.push_back(&op);
  }
  return out;
}

std::vector<const DeviceSeq*> CoalesceDevices(const WriteBatch& batch) {
  std::map<std::string_view, const DeviceSeq*> last;
  for (const DeviceSeq& d : batch.device_seqs()) last[d.device] = &d;
  std::vector<const DeviceSeq*> out;
  for (const auto& [unused, d] : last) out.push_back(d);
  return out;
}

}  // namespace skiff::store::internal

// Folding a WriteBatch to its net effect: the last op on each (table, key)
// wins. Stores that write a batch with set-based statements need each key at
// most once per statement.
//
// Pure function; thread-safe.
#ifndef SKIFF_STORE_INTERNAL_COALESCE_H_
#define SKIFF_STORE_INTERNAL_COALESCE_H_

#include <vector>

#include "store/write_batch.h"

namespace skiff::store::internal {

struct CoalescedBatch {
  std::vector<const WriteBatch::Op*> puts;     // in (table, key) order
  std::vector<const WriteBatch::Op*> deletes;  // in (table, key) order
  // The ops a later op of their key replaced, in the batch's order.
  std::vector<const WriteBatch::Op*> folded;
};

// The ops point into `batch`, which must outlive the result.
CoalescedBatch Coalesce(const WriteBatch& batch);

// The last DeviceSeq of the batch for each device.
std::vector<const DeviceSeq*> CoalesceDevices(const WriteBatch& batch);

}  // namespace skiff::store::internal

#endif  // SKIFF_STORE_INTERNAL_COALESCE_H_

// FaultyStore: a StoreWrapper whose writes fail the ways a real database's
// do, for unit tests of what sits above a store (leveldb's ErrorEnv idea).
//
// Each fault applies to the next write only:
// - Refuse(status): nothing is applied and `status` is returned, as after a
//   failed statement or a commit the store checked and found absent;
// - ApplyThenLose(status): the batch is applied, then `status` is returned,
//   as after a COMMIT whose answer was lost (outcome_unknown);
// - OtherWriterThenRefuse(batch, status): `batch` (another writer's commit,
//   for instance one taking the same sync ids) is applied instead of ours,
//   then `status` is returned.
//
// Thread-safe; the target store must be too.
#ifndef SKIFF_SUPPORT_FAULTY_STORE_H_
#define SKIFF_SUPPORT_FAULTY_STORE_H_

#include <mutex>
#include <optional>
#include <utility>

#include "store/store.h"

namespace skiff::support {

class FaultyStore : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;

  void Refuse(Status status) { Set({Kind::kRefuse, std::move(status), {}}); }
  void ApplyThenLose(Status status) { Set({Kind::kApplyThenLose, std::move(status), {}}); }
  void OtherWriterThenRefuse(store::WriteBatch other, Status status) {
    Set({Kind::kOtherWriter, std::move(status), std::move(other)});
  }
  // Writes that met a fault so far.
  int faults_met() const {
    std::lock_guard lock(mu_);
    return met_;
  }

  Status Write(const store::WriteBatch& batch) override {
    std::optional<Fault> fault;
    {
      std::lock_guard lock(mu_);
      fault.swap(next_);
      if (fault) ++met_;
    }
    if (!fault) return StoreWrapper::Write(batch);
    switch (fault->kind) {
      case Kind::kRefuse:
        return fault->status;
      case Kind::kApplyThenLose:
        SKIFF_RETURN_IF_ERROR(StoreWrapper::Write(batch));
        return fault->status;
      case Kind::kOtherWriter:
        SKIFF_RETURN_IF_ERROR(StoreWrapper::Write(fault->other));
        return fault->status;
    }
    return fault->status;
  }

 private:
  enum class Kind { kRefuse, kApplyThenLose, kOtherWriter };
  struct Fault {
    Kind kind;
    Status status;
    store::WriteBatch other;
  };
  void Set(Fault fault) {
    std::lock_guard lock(mu_);
    next_ = std::move(fault);
  }

  mutable std::mutex mu_;
  std::optional<Fault> next_;  // guarded by mu_
  int met_ = 0;                // guarded by mu_
};

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_FAULTY_STORE_H_

// RssSampler: the resident set of one process, sampled on a fixed period by a
// thread of its own, with the phases of a timeline marked as they happen.
//
// The process can change (a restarted server): Watch() switches to a new pid
// and Watch(-1) pauses sampling while none runs. Samples are taken from the
// kernel's own count (/proc/PID/status VmRSS), never estimated.
// Thread-safe: Watch(), Mark() and the readers may be called from any thread.
#ifndef SKIFF_SUPPORT_MEMORY_SAMPLER_H_
#define SKIFF_SUPPORT_MEMORY_SAMPLER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

namespace skiff::support {

struct RssSample {
  double seconds = 0;  // since the sampler started
  int64_t bytes = 0;
};

struct PhaseMark {
  std::string name;
  double start_seconds = 0;
  double end_seconds = 0;  // the start of the next phase, or of Stop()
};

class RssSampler {
 public:
  explicit RssSampler(std::chrono::milliseconds period);
  ~RssSampler();  // Stop()
  RssSampler(const RssSampler&) = delete;
  RssSampler& operator=(const RssSampler&) = delete;

  // Samples `pid` from now on (one sample at once); -1 stops sampling until
  // the next call.
  void Watch(pid_t pid);
  // Starts phase `name`, ending the previous one.
  void Mark(const std::string& name);
  // Ends the last phase and the thread. Idempotent.
  void Stop();

  double Elapsed() const;
  std::vector<RssSample> samples() const;
  std::vector<PhaseMark> phases() const;

 private:
  void Run();
  void SampleNow();  // requires mu_

  const std::chrono::milliseconds period_;
  const std::chrono::steady_clock::time_point start_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  pid_t pid_ = -1;                  // guarded by mu_
  bool stop_ = false;               // guarded by mu_
  std::vector<RssSample> samples_;  // guarded by mu_
  std::vector<PhaseMark> phases_;   // guarded by mu_
  std::thread thread_;
};

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_MEMORY_SAMPLER_H_

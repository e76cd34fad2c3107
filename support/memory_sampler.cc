#include "support/memory_sampler.h"

#include "support/skiffd_process.h"

namespace skiff::support {

RssSampler::RssSampler(std::chrono::milliseconds period)
    : period_(period), start_(std::chrono::steady_clock::now()), thread_([this] { Run(); }) {}

RssSampler::~RssSampler() { Stop(); }

double RssSampler::Elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void RssSampler::Watch(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  pid_ = pid;
  SampleNow();
}

void RssSampler::Mark(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  const double now = Elapsed();
  if (!phases_.empty()) phases_.back().end_seconds = now;
  phases_.push_back({name, now, now});
  // A sample at every boundary, so a short phase still shows on the chart.
  SampleNow();
}

void RssSampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
    if (!phases_.empty()) phases_.back().end_seconds = Elapsed();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<RssSample> RssSampler::samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

std::vector<PhaseMark> RssSampler::phases() const {
  std::lock_guard<std::mutex> lock(mu_);
  return phases_;
}

void RssSampler::SampleNow() {
  if (pid_ <= 0) return;
  const int64_t bytes = ResidentBytes(pid_);
  if (bytes >= 0) samples_.push_back({Elapsed(), bytes});
}

void RssSampler::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  // Deadlines advance by whole periods, so the series keeps its rhythm even
  // when a read of /proc is slow.
  auto next = std::chrono::steady_clock::now();
  while (!stop_) {
    SampleNow();
    next += period_;
    cv_.wait_until(lock, next, [this] { return stop_; });
  }
}

}  // namespace skiff::support

// MachineLoad: how busy the machine was while this process measured, from
// the kernel's own counts: CPU time of every process (/proc/stat) minus the
// CPU time of this process and its reaped children (getrusage), over wall
// time. What is left is what something else used: another build, another
// benchmark, a PostgreSQL serving someone else.
//
// Thread-compatible: a sample is a value; Take() may be called from any
// thread.
#ifndef SKIFF_SUPPORT_MACHINE_LOAD_H_
#define SKIFF_SUPPORT_MACHINE_LOAD_H_

#include <array>

namespace skiff::support {

struct MachineSample {
  double wall_seconds = 0;     // monotonic clock
  double busy_seconds = 0;     // all CPUs, all processes (user, system, irq, steal)
  double own_cpu_seconds = 0;  // this process and its reaped children
  std::array<double, 3> loadavg = {0, 0, 0};
  bool valid = false;  // false when /proc could not be read
};

MachineSample TakeMachineSample();

// CPU other processes used between two samples, in percent of one CPU
// (200 = two CPUs fully busy); negative rounding is clamped to 0. -1 when a
// sample is invalid or no time passed.
double OtherCpuPercent(const MachineSample& from, const MachineSample& to);

// Above this much of one CPU used by others, a measurement is called noisy.
inline constexpr double kNoisyOtherCpuPercent = 25;

}  // namespace skiff::support

#endif  // SKIFF_SUPPORT_MACHINE_LOAD_H_

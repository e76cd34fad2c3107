#include "support/machine_load.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/resource.h>
#include <unistd.h>

namespace skiff::support {
namespace {

double Seconds(const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; }

double OwnCpuSeconds() {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return Seconds(self.ru_utime) + Seconds(self.ru_stime) + Seconds(children.ru_utime) +
         Seconds(children.ru_stime);
}

// The first line of /proc/stat: "cpu user nice system idle iowait irq
// softirq steal guest guest_nice", in clock ticks summed over all CPUs.
bool BusySeconds(double* out) {
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return false;
  std::istringstream fields(line.substr(4));
  double v[8] = {};
  for (double& f : v) {
    if (!(fields >> f)) return false;
  }
  // Idle (3) and iowait (4) are not busy; guest time is already in user.
  const double busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  *out = busy / double(sysconf(_SC_CLK_TCK));
  return true;
}

}  // namespace

MachineSample TakeMachineSample() {
  MachineSample s;
  s.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  s.own_cpu_seconds = OwnCpuSeconds();
  s.valid = BusySeconds(&s.busy_seconds);
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &s.loadavg[0], &s.loadavg[1], &s.loadavg[2]) != 3) {
      s.loadavg = {0, 0, 0};
    }
    std::fclose(f);
  }
  return s;
}

double OtherCpuPercent(const MachineSample& from, const MachineSample& to) {
  const double wall = to.wall_seconds - from.wall_seconds;
  if (!from.valid || !to.valid || wall <= 0) return -1;
  const double others =
      (to.busy_seconds - from.busy_seconds) - (to.own_cpu_seconds - from.own_cpu_seconds);
  return std::max(0.0, 100 * others / wall);
}

}  // namespace skiff::support

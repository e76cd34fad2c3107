#include "compare/mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

namespace skiff::compare {
namespace {

struct Ranking {
  double rank_sum_x = 0;
  double tie_term = 0;  // sum of t^3 - t over groups of t tied values
  bool has_ties = false;
};

// Midranks (tied values share the mean of their ranks) of x within x ∪ y.
Ranking Rank(std::span<const double> x, std::span<const double> y) {
  std::vector<std::pair<double, bool>> all;  // value, is from x
  all.reserve(x.size() + y.size());
  for (double v : x) all.emplace_back(v, true);
  for (double v : y) all.emplace_back(v, false);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Ranking r;
  size_t i = 0;
  while (i < all.size()) {
    size_t j = i;
    while (j + 1 < all.size() && all[j + 1].first == all[i].first) ++j;
    double t = static_cast<double>(j - i + 1);
    double midrank = (static_cast<double>(i + 1) + static_cast<double>(j + 1)) / 2;
    for (size_t k = i; k <= j; ++k) {
      if (all[k].second) r.rank_sum_x += midrank;
    }
    if (t > 1) {
      r.has_ties = true;
      r.tie_term += t * t * t - t;
    }
    i = j + 1;
  }
  return r;
}

// P(U >= u) under the null hypothesis without ties. Counts orderings with a
// given U by the recurrence on the largest value (from x: it beats all ny
// values of y), keeping one row of the table at a time. Only additions of
// non-negative counts, so doubles stay accurate far past 2^53.
double ExactUpperTail(int nx, int ny, int u) {
  // prev[j][k]: orderings of (i-1) x values and j y values with U = k.
  std::vector<std::vector<double>> prev(ny + 1, std::vector<double>{1.0});
  for (int i = 1; i <= nx; ++i) {
    std::vector<std::vector<double>> cur(ny + 1);
    cur[0] = {1.0};
    for (int j = 1; j <= ny; ++j) {
      std::vector<double>& c = cur[j];
      c.assign(static_cast<size_t>(i) * j + 1, 0.0);
      for (size_t k = 0; k < prev[j].size(); ++k) c[k + j] += prev[j][k];
      for (size_t k = 0; k < cur[j - 1].size(); ++k) c[k] += cur[j - 1][k];
    }
    prev = std::move(cur);
  }
  const std::vector<double>& counts = prev[ny];
  double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  double tail = 0;
  for (size_t k = static_cast<size_t>(std::max(u, 0)); k < counts.size(); ++k) tail += counts[k];
  return tail / total;
}

}  // namespace

double SmallestPValue(int nx, int ny) {
  if (nx <= 0 || ny <= 0) return 1;
  // 2 / C(nx + ny, nx), built up as a product to stay in range.
  double p = 2;
  for (int k = 1; k <= nx; ++k) p *= static_cast<double>(k) / static_cast<double>(ny + k);
  return std::min(1.0, p);
}

std::optional<MannWhitneyResult> MannWhitneyU(std::span<const double> x, std::span<const double> y,
                                              MannWhitneyMethod method) {
  if (x.empty() || y.empty()) return std::nullopt;
  const double nx = static_cast<double>(x.size());
  const double ny = static_cast<double>(y.size());
  Ranking ranking = Rank(x, y);
  MannWhitneyResult r;
  r.u_x = ranking.rank_sum_x - nx * (nx + 1) / 2;
  r.u_y = nx * ny - r.u_x;
  const double u = std::max(r.u_x, r.u_y);

  bool exact = method == MannWhitneyMethod::kExact;
  if (method == MannWhitneyMethod::kAuto) {
    exact = !ranking.has_ties && x.size() <= kMaxExactSampleSize && y.size() <= kMaxExactSampleSize;
  }
  r.exact = exact;
  double p;
  if (exact) {
    // A half-integer U (only possible with ties) is rounded down, as scipy's
    // exact method does.
    p = 2 * ExactUpperTail(static_cast<int>(x.size()), static_cast<int>(y.size()),
                           static_cast<int>(std::floor(u)));
  } else {
    const double n = nx + ny;
    const double variance = nx * ny / 12 * ((n + 1) - ranking.tie_term / (n * (n - 1)));
    if (variance <= 0) {
      p = 1;  // every value tied: no evidence of any difference
    } else {
      const double z = (u - nx * ny / 2 - 0.5) / std::sqrt(variance);
      p = std::erfc(z / std::sqrt(2.0));  // 2 * upper tail of the standard normal
    }
  }
  r.p_value = std::clamp(p, 0.0, 1.0);
  return r;
}

}  // namespace skiff::compare

// Mann-Whitney U test (Wilcoxon rank-sum), two-sided: do two sets of timings
// come from the same distribution? It assumes nothing about the shape of the
// distribution, which suits benchmark times (skewed, with outliers).
//
// Pure functions; thread-safe.
#ifndef SKIFF_COMPARE_MANN_WHITNEY_H_
#define SKIFF_COMPARE_MANN_WHITNEY_H_

#include <optional>
#include <span>

namespace skiff::compare {

enum class MannWhitneyMethod {
  // Exact when there are no ties and each sample has at most
  // kMaxExactSampleSize values; the normal approximation otherwise.
  kAuto,
  // The exact distribution of U without ties (ties are ignored, as scipy's
  // method="exact" does).
  kExact,
  // Normal approximation with tie correction and continuity correction.
  kAsymptotic,
};

inline constexpr int kMaxExactSampleSize = 50;

struct MannWhitneyResult {
  double u_x = 0;      // U statistic of the first sample
  double u_y = 0;      // U statistic of the second sample; u_x + u_y = nx * ny
  double p_value = 1;  // two-sided
  bool exact = false;  // which method produced p_value
};

// Returns nullopt when either sample is empty (there is nothing to test).
std::optional<MannWhitneyResult> MannWhitneyU(std::span<const double> x, std::span<const double> y,
                                              MannWhitneyMethod method = MannWhitneyMethod::kAuto);

// The smallest two-sided p-value the exact test can produce with samples of
// these sizes: 2 / C(nx + ny, nx). When it is not below alpha no difference
// can ever be significant, whatever the numbers.
double SmallestPValue(int nx, int ny);

}  // namespace skiff::compare

#endif  // SKIFF_COMPARE_MANN_WHITNEY_H_

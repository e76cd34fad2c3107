// The name of the bench family an executable runs (kv_bench, geo_bench, ...),
// for the suite's main (bench_main.cc): its options, its messages and the
// `skiff_family` of its JSON. Each family's executable defines it in a
// one-line source that bench/CMakeLists.txt generates, so the main itself is
// compiled once for every family.
#ifndef SKIFF_SUPPORT_BENCH_FAMILY_H_
#define SKIFF_SUPPORT_BENCH_FAMILY_H_

namespace skiff::bench {

extern const char kBenchFamily[];

}  // namespace skiff::bench

#endif  // SKIFF_SUPPORT_BENCH_FAMILY_H_

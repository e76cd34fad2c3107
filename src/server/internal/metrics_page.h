// The /metrics page (docs/deploy.md "Metrics"): the figures `stats` gathers
// and the request counters, as Prometheus families named skiff_*.
// Pure function; thread-safe.
#ifndef SKIFF_SERVER_INTERNAL_METRICS_PAGE_H_
#define SKIFF_SERVER_INTERNAL_METRICS_PAGE_H_

#include <cstdint>
#include <string>

#include "server/internal/request_metrics.h"
#include "server/internal/wire/stats_reply.h"

namespace skiff::server::internal {

std::string RenderMetricsPage(const StatsFigures& figures, const RequestMetrics& requests);

// The skiff_store_errors_total family (the store calls that failed, by
// `call`: read or write), appended to a page RenderMetricsPage wrote: the
// server counts them around the store (counted_store.h), outside the
// handler that renders the rest.
void AppendStoreErrors(std::string& page, uint64_t read_errors, uint64_t write_errors);

}  // namespace skiff::server::internal

#endif  // SKIFF_SERVER_INTERNAL_METRICS_PAGE_H_

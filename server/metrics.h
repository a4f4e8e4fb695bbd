// Prometheus metrics of hilsim-server (docs/SERVER.md lists them): served on
// http://<bind_address>:<metrics_port>/metrics by prometheus-cpp's exposer. Values are sampled
// from the sessions when Prometheus scrapes, on the exposer's own thread: nothing is recorded on
// the RT threads or the network threads for it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hilsim/v1/session.pb.h"
#include "rt/histogram.h"

namespace hilsim::server {

/// One session's figures at scrape time.
struct SessionMetricsSample {
  std::uint64_t id = 0;
  std::string name;
  std::string model;
  v1::SessionStats stats;                 ///< as GetStats returns them
  std::vector<std::string> dof_labels;    ///< ModelInfo.v_labels: the `dof` label of per-DoF counts
  rt::HistogramSnapshot wakeup_latency;   ///< [ns], the loop's wake-up latency
  rt::HistogramSnapshot compute_time;     ///< [ns], wake-up to end of cycle
  rt::HistogramSnapshot engine_step;      ///< [ns], the physics substeps of one cycle
};

/// Called at each scrape: the sessions that exist now.
using MetricsSource = std::function<std::vector<SessionMetricsSample>()>;
/// Called at each scrape: the shared workers (empty without rt.workers).
using WorkerMetricsSource = std::function<std::vector<v1::WorkerStats>()>;

class MetricsExporter {
 public:
  /// Listens on address:port (0: ephemeral). Throws std::runtime_error when it cannot bind.
  MetricsExporter(const std::string& address, std::uint16_t port, MetricsSource source,
                  WorkerMetricsSource workers = {});
  ~MetricsExporter();
  std::uint16_t port() const;
  /// The Prometheus text exposition the endpoint serves now (tests, logging).
  std::string render() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hilsim::server

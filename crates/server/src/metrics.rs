//! Prometheus metrics. The recorder is process-global (the `metrics` facade
//! allows one), so it is installed once and shared by every server started
//! in this process, e.g. by in-process tests.

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The process's Prometheus handle; `None` if another recorder was installed first.
pub fn handle() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let installed = PrometheusBuilder::new().install_recorder();
            if let Err(error) = &installed {
                tracing::warn!(%error, "metrics recorder not installed; /metrics will be empty");
            }
            installed.ok()
        })
        .as_ref()
}

/// Renders all metrics in the Prometheus text format.
pub fn render() -> String {
    handle().map(|h| h.render()).unwrap_or_default()
}

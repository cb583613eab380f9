//! Exporting a run's spans (feature `otel`): to an OpenTelemetry collector over OTLP, or
//! to a file of JSON lines.
//!
//! [`init`] installs a `tracing` subscriber whose only layer is
//! [`tracing_opentelemetry`]'s, over an OpenTelemetry SDK tracer provider with a batch
//! processor (spans are exported from the SDK's own thread, never on the run's). The
//! [`TelemetryGuard`] it returns flushes what is buffered and shuts the provider down when
//! dropped (or on [`TelemetryGuard::shutdown`]), so a short command loses no span.
//!
//! - [`TraceTarget::Otlp`]: OTLP over HTTP with protobuf bodies, configured by the
//!   standard variables: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL) or
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` (a base, `/v1/traces` appended; default
//!   `http://localhost:4318`), `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,..`, e.g. an
//!   authorization header), `OTEL_EXPORTER_OTLP_TIMEOUT`, and `OTEL_SERVICE_NAME` /
//!   `OTEL_RESOURCE_ATTRIBUTES` (the service is `harnessx` unless they name one).
//! - [`TraceTarget::File`]: one JSON object per finished span, the format of
//!   [`JsonLinesExporter`].
//!
//! Only spans and events of the harnessx crates at INFO and above are kept (an HTTP
//! client's or the MCP SDK's own spans are not). What the spans record, and what they
//! leave out unless asked, is in `docs/observability.md`.

mod file;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::resource::{EnvResourceDetector, TelemetryResourceDetector};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;

pub use file::JsonLinesExporter;

/// The service name spans are reported under unless `OTEL_SERVICE_NAME` or
/// `OTEL_RESOURCE_ATTRIBUTES` gives one.
pub const DEFAULT_SERVICE_NAME: &str = "harnessx";

/// The crates whose spans and events are exported.
const TARGETS: [&str; 5] =
    ["harnessx", "harnessx_core", "harnessx_agent", "harnessx_durable", "harnessx_mcp"];

/// Where spans go.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceTarget {
    /// An OpenTelemetry collector (or any OTLP/HTTP endpoint), as the `OTEL_EXPORTER_OTLP_*`
    /// variables say.
    Otlp,
    /// An OTLP/HTTP traces endpoint given in code (the full URL, e.g.
    /// `http://127.0.0.1:4318/v1/traces`); the variables still give headers and timeout.
    OtlpEndpoint(String),
    /// A file of JSON lines, created (or truncated).
    File(PathBuf),
}

/// Why tracing could not be set up or shut down.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The OTLP exporter could not be built (a malformed `OTEL_EXPORTER_OTLP_*` value,
    /// an unsupported protocol).
    #[error("could not set up the OTLP exporter: {0}")]
    Exporter(String),
    /// The trace file could not be created.
    #[error("could not create the trace file {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A global `tracing` subscriber was already installed; [`init`] installs one.
    #[error("a tracing subscriber is already installed; spans can only be exported by one")]
    AlreadyInstalled,
    /// Flushing or shutting down failed (the collector was unreachable, the file could
    /// not be written): some spans may be lost.
    #[error("could not export every span: {0}")]
    Shutdown(String),
}

/// Keeps the exporter alive; flushes and shuts it down when dropped. Keep it until the
/// work whose spans matter is done (in `main`, until the end).
#[must_use = "dropping the guard shuts the exporter down at once"]
#[derive(Debug)]
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
    /// The first export that failed, reported by [`shutdown`](Self::shutdown).
    failure: Failure,
}

impl TelemetryGuard {
    /// Flushes the spans buffered so far; the exporter stays up.
    pub fn flush(&self) -> Result<(), TelemetryError> {
        match &self.provider {
            Some(p) => p.force_flush().map_err(|e| TelemetryError::Shutdown(e.to_string())),
            None => Ok(()),
        }
    }

    /// Flushes and shuts the exporter down, reporting an export that failed (dropping
    /// the guard does the same and ignores the failure).
    pub fn shutdown(mut self) -> Result<(), TelemetryError> {
        self.shutdown_provider()
    }

    fn shutdown_provider(&mut self) -> Result<(), TelemetryError> {
        let Some(provider) = self.provider.take() else { return Ok(()) };
        provider
            .shutdown_with_timeout(SHUTDOWN_TIMEOUT)
            .map_err(|e| TelemetryError::Shutdown(e.to_string()))?;
        // The SDK only logs a failed export; an unreachable collector is said here.
        match self.failure.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(e) => Err(TelemetryError::Shutdown(e)),
            None => Ok(()),
        }
    }
}

/// How long a shutdown waits for the last export.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown_provider() {
            // The subscriber may be gone by now: say it where an operator sees it.
            eprintln!("harnessx: {e}");
        }
    }
}

/// Exports the spans of every thread to `target`, for the rest of the process (or until
/// the guard is dropped): installs the global `tracing` subscriber.
///
/// ```no_run
/// use harnessx_agent::telemetry::{TraceTarget, init};
///
/// let _guard = init(TraceTarget::File("trace.jsonl".into())).expect("tracing is set up");
/// // ... runs ...
/// ```
pub fn init(target: TraceTarget) -> Result<TelemetryGuard, TelemetryError> {
    let (provider, failure, dispatch) = build(target)?;
    tracing::dispatcher::set_global_default(dispatch).map_err(|_| TelemetryError::AlreadyInstalled)?;
    Ok(TelemetryGuard { provider: Some(provider), failure })
}

/// Like [`init`], for the current thread only, until the second guard is dropped: for
/// tests (and a current-thread runtime), where a process-wide subscriber cannot be
/// installed twice.
pub fn init_for_current_thread(
    target: TraceTarget,
) -> Result<(TelemetryGuard, tracing::dispatcher::DefaultGuard), TelemetryError> {
    let (provider, failure, dispatch) = build(target)?;
    let scope = tracing::dispatcher::set_default(&dispatch);
    Ok((TelemetryGuard { provider: Some(provider), failure }, scope))
}

/// The first failed export's error, shared by an exporter and its guard.
type Failure = Arc<Mutex<Option<String>>>;

/// An exporter that remembers its first failed export, so that the guard can report it.
#[derive(Debug)]
struct Reporting<E> {
    inner: E,
    failure: Failure,
}

impl<E: SpanExporter> SpanExporter for Reporting<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        if let Err(e) = &result {
            self.failure.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(|| e.to_string());
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

fn build(target: TraceTarget) -> Result<(SdkTracerProvider, Failure, tracing::Dispatch), TelemetryError> {
    let builder = SdkTracerProvider::builder().with_resource(resource());
    let failure = Failure::default();
    let reporting = |inner| Reporting { inner, failure: failure.clone() };
    let provider = match target {
        TraceTarget::Otlp => builder.with_batch_exporter(reporting(otlp(None)?)),
        TraceTarget::OtlpEndpoint(url) => builder.with_batch_exporter(reporting(otlp(Some(&url))?)),
        TraceTarget::File(path) => builder.with_batch_exporter(Reporting {
            inner: JsonLinesExporter::create(&path)
                .map_err(|source| TelemetryError::File { path: path.clone(), source })?,
            failure: failure.clone(),
        }),
    }
    .build();
    let tracer = provider.tracer("harnessx");
    let mut targets = Targets::new().with_default(LevelFilter::OFF);
    for name in TARGETS {
        targets = targets.with_target(name, LevelFilter::INFO);
    }
    // The spans are where the conventions put them: where in the source they were made,
    // which thread, and busy/idle times would only be noise on every span.
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_threads(false)
        .with_location(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_filter(targets);
    let subscriber = tracing_subscriber::registry().with(layer);
    Ok((provider, failure, tracing::Dispatch::new(subscriber)))
}

/// `service.name` from `OTEL_SERVICE_NAME`, else `OTEL_RESOURCE_ATTRIBUTES`, else
/// [`DEFAULT_SERVICE_NAME`]; the SDK's own attributes; `OTEL_RESOURCE_ATTRIBUTES`.
fn resource() -> Resource {
    let mut builder = Resource::builder_empty()
        .with_service_name(DEFAULT_SERVICE_NAME)
        .with_detector(Box::new(TelemetryResourceDetector))
        .with_detector(Box::new(EnvResourceDetector::new()));
    if let Some(name) = std::env::var("OTEL_SERVICE_NAME").ok().filter(|n| !n.trim().is_empty()) {
        builder = builder.with_service_name(name);
    }
    builder.build()
}

fn otlp(endpoint: Option<&str>) -> Result<opentelemetry_otlp::SpanExporter, TelemetryError> {
    // reqwest is built without a bundled crypto provider (as for the model adapters); an
    // `https://` collector (Logfire, Langfuse cloud) needs one.
    harnessx_infra::tls::install_default_provider();
    let mut builder = opentelemetry_otlp::SpanExporter::builder().with_http();
    if let Some(url) = endpoint {
        builder = builder.with_endpoint(url);
    }
    builder.build().map_err(|e| TelemetryError::Exporter(e.to_string()))
}

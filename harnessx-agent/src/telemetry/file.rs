//! [`JsonLinesExporter`]: finished spans as JSON lines, for people without a collector.
//!
//! An OpenTelemetry SDK [`SpanExporter`], so a line carries what an OTLP export carries
//! (ids, parent, kind, times, attributes, status, events), in a form `jq` reads:
//!
//! ```json
//! {"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7",
//!  "parent_span_id":null,"name":"invoke_agent","kind":"internal",
//!  "start_time_unix_nano":1764554400000000000,"end_time_unix_nano":1764554400012000000,
//!  "attributes":{"gen_ai.operation.name":"invoke_agent","gen_ai.provider.name":"test"},
//!  "status":{"code":"UNSET","message":""},"events":[]}
//! ```
//!
//! Written as one line per span (spans finish children first), flushed at the end of
//! every batch the SDK hands over.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanId, SpanKind, Status};
use opentelemetry::{Array, KeyValue, Value};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use serde::Serialize;
use serde_json::{Map, Value as Json};

/// Writes each finished span as one JSON object on its own line (see the module docs for
/// the fields).
#[derive(Debug)]
pub struct JsonLinesExporter {
    out: Mutex<Option<BufWriter<File>>>,
}

impl JsonLinesExporter {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self { out: Mutex::new(Some(BufWriter::new(File::create(path)?))) })
    }

    fn write(&self, batch: &[SpanData]) -> OTelSdkResult {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let Some(out) = out.as_mut() else { return Err(OTelSdkError::AlreadyShutdown) };
        let mut write = || -> std::io::Result<()> {
            for span in batch {
                serde_json::to_writer(&mut *out, &SpanLine::from(span))?;
                out.write_all(b"\n")?;
            }
            out.flush()
        };
        write().map_err(|e| OTelSdkError::InternalFailure(format!("writing the trace file: {e}")))
    }
}

impl SpanExporter for JsonLinesExporter {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        std::future::ready(self.write(&batch))
    }

    fn shutdown_with_timeout(&self, _timeout: std::time::Duration) -> OTelSdkResult {
        let taken = self.out.lock().unwrap_or_else(|e| e.into_inner()).take();
        match taken {
            Some(mut out) => {
                out.flush().map_err(|e| OTelSdkError::InternalFailure(format!("writing the trace file: {e}")))
            }
            None => Ok(()),
        }
    }
}

/// One line of the file.
#[derive(Serialize)]
struct SpanLine<'a> {
    trace_id: String,
    span_id: String,
    /// `null` for a root span.
    parent_span_id: Option<String>,
    name: &'a str,
    kind: &'static str,
    start_time_unix_nano: u64,
    end_time_unix_nano: u64,
    attributes: Map<String, Json>,
    status: StatusLine<'a>,
    events: Vec<EventLine<'a>>,
}

#[derive(Serialize)]
struct StatusLine<'a> {
    /// `UNSET`, `OK` or `ERROR`.
    code: &'static str,
    message: &'a str,
}

#[derive(Serialize)]
struct EventLine<'a> {
    name: &'a str,
    time_unix_nano: u64,
    attributes: Map<String, Json>,
}

impl<'a> From<&'a SpanData> for SpanLine<'a> {
    fn from(span: &'a SpanData) -> Self {
        let (code, message) = match &span.status {
            Status::Unset => ("UNSET", ""),
            Status::Ok => ("OK", ""),
            Status::Error { description } => ("ERROR", &**description),
        };
        SpanLine {
            trace_id: span.span_context.trace_id().to_string(),
            span_id: span.span_context.span_id().to_string(),
            parent_span_id: (span.parent_span_id != SpanId::INVALID).then(|| span.parent_span_id.to_string()),
            name: &span.name,
            kind: match span.span_kind {
                SpanKind::Client => "client",
                SpanKind::Server => "server",
                SpanKind::Producer => "producer",
                SpanKind::Consumer => "consumer",
                SpanKind::Internal => "internal",
            },
            start_time_unix_nano: unix_nanos(span.start_time),
            end_time_unix_nano: unix_nanos(span.end_time),
            attributes: attributes(&span.attributes),
            status: StatusLine { code, message },
            events: span
                .events
                .iter()
                .map(|e| EventLine {
                    name: &e.name,
                    time_unix_nano: unix_nanos(e.timestamp),
                    attributes: attributes(&e.attributes),
                })
                .collect(),
        }
    }
}

fn unix_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

fn attributes(list: &[KeyValue]) -> Map<String, Json> {
    list.iter().map(|kv| (kv.key.to_string(), value(&kv.value))).collect()
}

fn value(v: &Value) -> Json {
    match v {
        Value::Bool(b) => Json::Bool(*b),
        Value::I64(i) => Json::from(*i),
        Value::F64(f) => Json::from(*f),
        Value::String(s) => Json::String(s.to_string()),
        Value::Array(Array::Bool(a)) => Json::from(a.clone()),
        Value::Array(Array::I64(a)) => Json::from(a.clone()),
        Value::Array(Array::F64(a)) => Json::from(a.clone()),
        Value::Array(Array::String(a)) => {
            Json::Array(a.iter().map(|s| Json::String(s.to_string())).collect())
        }
        // Kinds added to OpenTelemetry later: their text.
        other => Json::String(other.to_string()),
    }
}

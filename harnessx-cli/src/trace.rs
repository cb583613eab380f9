//! `--trace otlp|FILE`: where the spans of the command go.

use harnessx::telemetry::{TelemetryGuard, TraceTarget, init};

use crate::error::CliError;

/// Parses a `--trace` value: `otlp` (any case) or a file path (`./otlp` for a file of
/// that name).
pub(crate) fn parse_target(value: &str) -> Result<TraceTarget, String> {
    if value.trim().is_empty() {
        return Err("give `otlp` or the path of a file to write spans to".into());
    }
    if value.eq_ignore_ascii_case("otlp") {
        return Ok(TraceTarget::Otlp);
    }
    Ok(TraceTarget::File(value.into()))
}

/// Installs the exporter for the whole command.
pub(crate) fn start(target: TraceTarget) -> Result<TelemetryGuard, CliError> {
    init(target).map_err(|e| CliError::Usage(format!("--trace: {e}")))
}

/// Flushes the last spans and stops the exporter; a failed export is reported, not fatal.
pub(crate) fn finish(guard: TelemetryGuard) {
    if let Err(e) = guard.shutdown() {
        errln!("harnessx: --trace: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn otlp_in_any_case_else_a_file() {
        assert_eq!(parse_target("otlp"), Ok(TraceTarget::Otlp));
        assert_eq!(parse_target("OTLP"), Ok(TraceTarget::Otlp));
        assert_eq!(parse_target("./otlp"), Ok(TraceTarget::File("./otlp".into())));
        assert_eq!(parse_target("run.jsonl"), Ok(TraceTarget::File("run.jsonl".into())));
        assert!(parse_target(" ").is_err());
    }
}

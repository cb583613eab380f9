//! `run`'s typed-answer flags: `--output-schema FILE` (a JSON Schema), `--output-mode`
//! and `--output-retries`. The file is read and checked before anything runs: a file
//! that cannot be read, is not JSON, is not a JSON object or is not a usable schema is a
//! one-line usage error (exit status 2).
//!
//! Not settings of `harnessx.toml`: the configuration files set what `run`, `chat`,
//! `resume` and `worker` share, and an output schema belongs to one task.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use harnessx::agent::{Output, OutputMode};

use crate::error::CliError;

/// The typed-answer flags of `run`.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct OutputArgs {
    /// The answer must be JSON that fits this JSON Schema (a file): it is printed as one
    /// line of JSON on stdout (with --json, `run_end`'s `output` is that value). An answer
    /// that does not fit is sent back to the model with the error; when the retries are
    /// spent the run fails (exit status 1) with the error, which names the field.
    #[arg(long, value_name = "FILE")]
    pub(crate) output_schema: Option<PathBuf>,
    /// How the model is asked for it: `tool` (a final_result tool; the default), `native`
    /// (the provider's JSON-schema answer format) or `prompted` (the schema in the system
    /// prompt).
    #[arg(long, value_enum, value_name = "MODE", requires = "output_schema")]
    pub(crate) output_mode: Option<ModeArg>,
    /// How many times an answer that does not fit is asked again (default 2).
    #[arg(long, value_name = "N", requires = "output_schema")]
    pub(crate) output_retries: Option<u32>,
}

/// An output mode as a flag value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ModeArg {
    Tool,
    Native,
    Prompted,
}

impl From<ModeArg> for OutputMode {
    fn from(mode: ModeArg) -> Self {
        match mode {
            ModeArg::Tool => OutputMode::Tool,
            ModeArg::Native => OutputMode::Native,
            ModeArg::Prompted => OutputMode::Prompted,
        }
    }
}

impl OutputArgs {
    /// The output the flags ask for, read and checked; `None` without `--output-schema`.
    pub(crate) fn output(&self) -> Result<Option<Output>, CliError> {
        let Some(path) = &self.output_schema else { return Ok(None) };
        let mut output = schema_file(path).map_err(|e| match e {
            CliError::Usage(m) => CliError::Usage(format!("--output-schema {m}")),
            other => other,
        })?;
        if let Some(mode) = self.output_mode {
            output = output.mode(mode.into());
        }
        if let Some(retries) = self.output_retries {
            output = output.retries(retries);
        }
        Ok(Some(output))
    }
}

/// The typed output the JSON Schema in the file at `path` asks for: a file that cannot
/// be read, is not JSON or not a usable schema is a usage error naming it (`eval`'s
/// `expect.output_schema` too).
pub(crate) fn schema_file(path: &Path) -> Result<Output, CliError> {
    let text = crate::config::file::read_capped(path)?;
    let schema: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| CliError::Usage(format!("{}: not JSON ({e})", path.display())))?;
    Output::json_schema(schema).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))
}

//! Typed results: a run that ends with a JSON value checked against a schema (and, for
//! [`Agent::run_typed`](crate::Agent::run_typed), decoded into a Rust type) instead of
//! free text. See `docs/output.md`.
//!
//! - [`Output`]: what a run must answer: a schema (from `schemars` with
//!   [`Output::of`], or written out with [`Output::json_schema`]), how the model is asked
//!   for it ([`OutputMode`]) and how many times a refused answer is asked again.
//! - `schema`: the schema as the model sees it (the canonical rules of tool schemas: no
//!   `$ref`, no `title`; a schema that is not an object wrapped as `{"response": ..}`),
//!   and the check of an answer: validation, then decoding.
//! - `answer`: the JSON of a text answer (fenced or not), parsed without trusting it.
//! - `attempts`: one run's attempts, which the run loop calls at a few marked places.

mod answer;
pub(crate) mod attempts;
mod schema;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use answer::answer_json;
use schema::OutputSchema;

/// The name of the tool whose call gives the final answer in [`OutputMode::Tool`].
pub const FINAL_RESULT_TOOL: &str = "final_result";

/// How many times a refused answer is asked again by default (three attempts in all).
pub const DEFAULT_OUTPUT_RETRIES: u32 = 2;

/// How the model is asked for the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// A `final_result` tool whose parameters are the schema: the run ends when the model
    /// calls it with arguments that fit. The agent's other tools stay available. Works
    /// with every model that calls tools (the default).
    #[default]
    Tool,
    /// The provider's own JSON-schema answer format: OpenAI's `response_format`
    /// (`json_schema`, strict), Anthropic's `output_config.format`. The answer is the
    /// model's text.
    Native,
    /// The schema in the system prompt; the answer is parsed from the model's text, in a
    /// ```` ```json ```` fence or not. For models and servers with neither tools nor an
    /// answer format.
    Prompted,
}

impl OutputMode {
    /// `tool`, `native` or `prompted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Native => "native",
            Self::Prompted => "prompted",
        }
    }
}

impl fmt::Display for OutputMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An output mode that is not `tool`, `native` or `prompted`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown output mode {0:?}: use tool, native or prompted")]
pub struct ParseOutputModeError(String);

impl FromStr for OutputMode {
    type Err = ParseOutputModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "tool" => Ok(Self::Tool),
            "native" => Ok(Self::Native),
            "prompted" => Ok(Self::Prompted),
            _ => Err(ParseOutputModeError(s.to_owned())),
        }
    }
}

/// Why a typed run could not start or could not end with an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// The schema is not usable: not a JSON object, nested too deep, or not valid JSON
    /// Schema.
    #[error("the output schema is not usable: {0}")]
    Schema(String),
    /// [`OutputMode::Tool`] needs the name `final_result`, and a registered tool has it
    /// (or one that differs only in case and separators).
    #[error(
        "the output tool `final_result` clashes with the registered tool {0:?}: rename that tool, or use the native or prompted output mode"
    )]
    ToolNameTaken(String),
    /// Every attempt was refused: the last refusal, which names the field.
    #[error("the final answer did not fit the output schema after {attempts} attempts: {error}")]
    Exhausted {
        /// Answers given (1 + the retries).
        attempts: u32,
        /// The last answer's error, one line naming the wrong field.
        error: String,
    },
    /// The answer fit the schema and the run completed, but it does not decode into the
    /// type asked for (a durable run resumed without the type, then read as it).
    #[error("the final answer does not decode: {0}")]
    Decode(String),
}

/// The decoding check of a Rust type: the answer must decode into it, or it is refused
/// like an answer the schema refuses.
type Decode = Arc<schema::DecodeCheck>;

/// What a run must answer: a JSON Schema, and optionally the mode and the number of
/// retries (else the agent's [`AgentConfig::output_mode`](crate::AgentConfig::output_mode)
/// and [`AgentConfig::output_retries`](crate::AgentConfig::output_retries)).
///
/// ```
/// use harnessx_agent::output::{Output, OutputMode};
/// use serde_json::json;
///
/// let output = Output::json_schema(json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
///     "required": ["city", "population"]
/// }))
/// .unwrap()
/// .mode(OutputMode::Native)
/// .retries(1);
/// assert_eq!(output.schema()["required"], json!(["city", "population"]));
/// assert!(Output::json_schema(json!([1, 2])).is_err());
/// ```
#[derive(Clone)]
pub struct Output {
    schema: Result<Arc<OutputSchema>, String>,
    mode: Option<OutputMode>,
    retries: Option<u32>,
    decode: Option<Decode>,
}

impl fmt::Debug for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Output")
            .field("schema", &self.schema.as_ref().map(|s| s.shown()))
            .field("mode", &self.mode)
            .field("retries", &self.retries)
            .field("decodes", &self.decode.is_some())
            .finish()
    }
}

impl Output {
    /// The answer is a `T`: its schema comes from `schemars`, and an answer that fits the
    /// schema must also decode into `T` (serde attributes the schema cannot say).
    pub fn of<T: harnessx_core::schemars::JsonSchema + DeserializeOwned + 'static>() -> Self {
        let root = harnessx_core::schemars::generate::SchemaSettings::draft2020_12()
            .with(|s| s.meta_schema = None)
            .into_generator()
            .into_root_schema_for::<T>();
        let decode: Decode = Arc::new(|value: &Value| match T::deserialize(value) {
            Ok(_) => Ok(()),
            Err(e) => Err(e.to_string()),
        });
        Self {
            schema: OutputSchema::new(&Value::from(root)).map(Arc::new),
            mode: None,
            retries: None,
            decode: Some(decode),
        }
    }

    /// The answer is any JSON value `schema` admits. The schema must be a JSON object
    /// (a boolean schema, or anything else, is refused).
    pub fn json_schema(schema: Value) -> Result<Self, OutputError> {
        let schema = OutputSchema::new(&schema).map_err(OutputError::Schema)?;
        Ok(Self { schema: Ok(Arc::new(schema)), mode: None, retries: None, decode: None })
    }

    /// How the model is asked for the answer.
    pub fn mode(mut self, mode: OutputMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// How many times a refused answer is asked again (0: one attempt).
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = Some(retries);
        self
    }

    /// The schema as the model sees it: canonical (no `$ref`, no `title`), an object (a
    /// schema of another type is the `response` property of one). `Value::Null` when
    /// [`of`](Self::of) could not make a schema of the type (the run then fails).
    pub fn schema(&self) -> &Value {
        static NULL: Value = Value::Null;
        self.schema.as_ref().map_or(&NULL, |s| s.shown())
    }

    /// The mode, when set here.
    pub fn get_mode(&self) -> Option<OutputMode> {
        self.mode
    }

    /// The retries, when set here.
    pub fn get_retries(&self) -> Option<u32> {
        self.retries
    }

    /// What a journal keeps of it, with the agent's defaults filled in: the schema as it
    /// was given, the mode and the retries. [`from_spec`](Self::from_spec) makes the same
    /// output again (without a Rust type's decoding check).
    pub fn spec(&self, config: &crate::AgentConfig) -> Result<OutputSpec, OutputError> {
        let schema = self.schema.as_ref().map_err(|e| OutputError::Schema(e.clone()))?;
        Ok(OutputSpec {
            schema: schema.given().clone(),
            mode: self.mode.unwrap_or(config.output_mode),
            retries: self.retries.unwrap_or(config.output_retries),
        })
    }

    /// The output a journal kept ([`spec`](Self::spec)).
    pub fn from_spec(spec: &OutputSpec) -> Result<Self, OutputError> {
        Ok(Self::json_schema(spec.schema.clone())?.mode(spec.mode).retries(spec.retries))
    }

    /// Checks one answer as a run would (validation against the schema, then the
    /// decoding check): the value, or the one-line error naming the wrong field. For
    /// benchmarks and for checking an answer outside a run.
    pub fn check(&self, answer: Value) -> Result<Value, String> {
        let schema = self.schema.as_ref().map_err(|e| format!("the output schema is not usable: {e}"))?;
        schema.check(answer, "invalid output", self.decode.as_deref())
    }
}

/// What a journal keeps of an [`Output`]: enough to check the answers of a resumed run
/// the same way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSpec {
    /// The JSON Schema, as it was given.
    pub schema: Value,
    /// The mode.
    pub mode: OutputMode,
    /// Retries after the first attempt.
    pub retries: u32,
}

/// Decodes the `value` of a completed typed run into `T`.
pub(crate) fn decode<T: DeserializeOwned>(value: Option<&Value>) -> Result<T, OutputError> {
    let value = value.ok_or_else(|| OutputError::Decode("the run has no output value".into()))?;
    T::deserialize(value).map_err(|e| OutputError::Decode(e.to_string()))
}

//! [`RegisteredTool`]: a definition checked and prepared for execution — its name shared
//! and its input schema compiled once. The registry stores these; the engine executes
//! them. Neither reaches into the other: both use this type's methods.

use std::sync::Arc;

use serde_json::Value;

use crate::error::RegistryError;
use crate::schema::{CompiledSchema, FlatSchema};
use crate::tool::definition::ToolDefinition;
use crate::tool::name::is_valid_tool_name;

/// A tool ready to execute.
pub(crate) struct RegisteredTool {
    def: ToolDefinition,
    name: Arc<str>,
    schema: CompiledSchema,
    /// How many properties the input schema declares (capped): the size the argument
    /// object is parsed into, so it does not grow key by key.
    arguments: usize,
    /// The input schema's flat form, when it has one and the handler takes checked text
    /// ([`FlatSchema`]): such calls skip the parse into a value.
    flat: Option<FlatSchema>,
}

impl RegisteredTool {
    /// Checks the definition (name, timeout, input schema) and compiles its schema.
    pub(crate) fn new(def: ToolDefinition) -> Result<Self, RegistryError> {
        if !is_valid_tool_name(&def.name) {
            return Err(RegistryError::InvalidName { name: def.name });
        }
        if let Some(t) = def.timeout_seconds
            && (t.is_nan() || t <= 0.0)
        {
            return Err(RegistryError::InvalidOption(format!(
                "timeout_seconds for tool \"{}\" must be a positive number of seconds, got {t}",
                def.name
            )));
        }
        let schema = CompiledSchema::compile(&def.name, &def.input_schema)?;
        let name = Arc::from(def.name.as_str());
        let arguments =
            def.input_schema.get("properties").and_then(|p| p.as_object()).map_or(0, |p| p.len().min(32));
        let flat = if def.handler.takes_json() { FlatSchema::of(&def.input_schema) } else { None };
        Ok(Self { def, name, schema, arguments, flat })
    }

    /// The definition as registered.
    pub(crate) fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    /// The registered name, shared with results and events.
    pub(crate) fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// How many arguments a call usually has (the declared properties, capped).
    pub(crate) fn argument_capacity(&self) -> usize {
        self.arguments
    }

    /// Whether the handler can run on `text` as it is: the schema is flat, the handler
    /// takes checked text, and the text fits the schema (see [`FlatSchema`]).
    pub(crate) fn takes_text(&self, text: &str) -> bool {
        self.flat.as_ref().is_some_and(|flat| flat.accepts(text))
    }

    /// `None` when `args` conform to the input schema; otherwise the one-line error.
    pub(crate) fn check(&self, args: &Value) -> Option<String> {
        self.schema.check(&self.name, args)
    }
}

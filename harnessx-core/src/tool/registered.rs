//! [`RegisteredTool`]: a definition checked and prepared for execution — its name shared
//! and its input schema compiled once. The registry stores these; the engine executes
//! them. Neither reaches into the other: both use this type's methods.

use std::sync::Arc;

use serde_json::Value;

use crate::error::RegistryError;
use crate::schema::CompiledSchema;
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
        Ok(Self { def, name, schema, arguments })
    }

    /// The definition as registered.
    pub(crate) fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    /// The registered name, shared with results and events.
    pub(crate) fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// `None` when `args` conform to the input schema; otherwise the one-line error.
    /// How many arguments a call usually has (the declared properties, capped).
    pub(crate) fn argument_capacity(&self) -> usize {
        self.arguments
    }

    pub(crate) fn check(&self, args: &Value) -> Option<String> {
        self.schema.check(&self.name, args)
    }
}

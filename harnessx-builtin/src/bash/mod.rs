//! The `bash` bundle: `run_bash`, which runs shell commands through a [`Sandbox`].
//!
//! Register it with [`register_bash_tools`] or `registry.load_builtin("bash", ..)`. The
//! sandbox is, in order: [`BashOptions::sandbox`], the registry's bound sandbox
//! ([`ToolRegistry::bind_sandbox`], which `Agent::builder().sandbox(..)` sets), else a new
//! [`LocalSandbox`] — which is then bound, so `registry.sandbox()` always says where
//! commands run once `bash` is registered.
//!
//! `run_bash` is annotated destructive (so `harnessx run` asks before it), not read-only,
//! open-world; it is serial (one command at a time) and `manual` to replay (a command's
//! effects are unknown after a crash). Its own timeout is 300 s, which `ToolPolicy` does
//! not change; a smaller `timeout` argument ends a command first. See
//! `docs/builtin-bash.md`.
//!
//! ```no_run
//! use harnessx_builtin::bash::{BashOptions, register_bash_tools};
//! use harnessx_core::ToolRegistry;
//!
//! let registry = ToolRegistry::new();
//! let names = register_bash_tools(&registry, BashOptions { output_limit: 10_000, ..Default::default() }).unwrap();
//! assert_eq!(names, ["run_bash"]);
//! assert_eq!(registry.sandbox().unwrap().name(), "local");
//! ```

mod tool;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use harnessx_core::catalog::{BuiltinBundle, BundleOptions, CommonOptions, select_tools};
use harnessx_core::{
    RegistryError, ReplayPolicy, Sandbox, ToolAnnotations, ToolDefinition, ToolHandler, ToolRegistry,
};
use serde::Deserialize;

use crate::sandbox::LocalSandbox;
use tool::RunBash;

/// The bundle name.
pub const BUNDLE: &str = "bash";

/// The tools of the bundle.
pub const BASH_TOOLS: [&str; 1] = ["run_bash"];

/// `run_bash`'s own timeout, in seconds; `ToolPolicy` does not change it.
pub const RUN_BASH_TIMEOUT_SECONDS: f64 = 300.0;

/// Default [`BashOptions::output_limit`]: 64 KiB.
pub const DEFAULT_OUTPUT_LIMIT: usize = 64 * 1024;

/// A shell command may change anything the sandbox lets it reach, and reach the network.
const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations::new().read_only(false).destructive(true).idempotent(false).open_world(true);

/// Options of [`register_bash_tools`] and of `load_builtin("bash", ..)`, which decodes
/// `output_limit` and `env` from its map. The model sees none of them.
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BashOptions {
    /// `include`, `exclude`, `permission`, `replace` (decoded by the catalog).
    #[serde(skip)]
    pub common: CommonOptions,
    /// Where commands run; `None`: the registry's bound sandbox, else a new
    /// [`LocalSandbox`]. Not a map key: pass it in code, or bind it on the registry.
    #[serde(skip)]
    pub sandbox: Option<Arc<dyn Sandbox>>,
    /// Most bytes of stdout and stderr together per command. Reaching it stops the
    /// command, and the result says so.
    #[serde(deserialize_with = "harnessx_core::catalog::positive")]
    pub output_limit: usize,
    /// Variables added to every command's environment, on top of the allow-list (`PATH`,
    /// `HOME`, `LANG`, `TERM=dumb`).
    pub env: BTreeMap<String, String>,
}

impl Default for BashOptions {
    fn default() -> Self {
        Self {
            common: CommonOptions::default(),
            sandbox: None,
            output_limit: DEFAULT_OUTPUT_LIMIT,
            env: BTreeMap::new(),
        }
    }
}

impl fmt::Debug for BashOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BashOptions")
            .field("common", &self.common)
            .field("sandbox", &self.sandbox.as_ref().map(|s| s.name().to_owned()))
            .field("output_limit", &self.output_limit)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl BundleOptions for BashOptions {
    fn set_common(&mut self, common: CommonOptions) {
        self.common = common;
    }

    fn register(self, registry: &ToolRegistry) -> Result<Vec<String>, RegistryError> {
        register_bash_tools(registry, self)
    }
}

inventory::submit! {
    BuiltinBundle::new::<BashOptions>(BUNDLE, &BASH_TOOLS)
}

/// Registers `run_bash` on `registry`; returns the names registered.
///
/// Fails, registering nothing, when `include`/`exclude` name an unknown tool or select
/// nothing, `output_limit` is zero, or (without `replace`) `run_bash` is already
/// registered.
pub fn register_bash_tools(
    registry: &ToolRegistry,
    options: BashOptions,
) -> Result<Vec<String>, RegistryError> {
    let common = &options.common;
    let selected = select_tools("bash tool", &BASH_TOOLS, common.include.as_deref(), &common.exclude)?;
    if options.output_limit == 0 {
        return Err(RegistryError::InvalidOption("output_limit must be at least 1".into()));
    }
    if !common.replace {
        registry.ensure_free(&selected)?;
    }
    let sandbox = match options.sandbox.clone().or_else(|| registry.sandbox()) {
        Some(sandbox) => sandbox,
        None => {
            let local: Arc<dyn Sandbox> = Arc::new(LocalSandbox::new());
            registry.bind_sandbox(local.clone());
            local
        }
    };
    let handler = RunBash {
        sandbox,
        output_limit: options.output_limit,
        env: options.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    };
    let def = ToolDefinition::new(
        "run_bash",
        tool::DESCRIPTION,
        tool::schema(),
        ToolHandler::Async(Arc::new(handler)),
    )
    .with_concurrent(false)
    .with_replay_policy(ReplayPolicy::Manual)
    .with_timeout_seconds(RUN_BASH_TIMEOUT_SECONDS)
    .with_annotations(ANNOTATIONS);
    Ok(vec![registry.register_tool_with(def, common.tool_options())?.name])
}

#[cfg(test)]
mod tests {
    use harnessx_core::catalog::option_keys;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_map_keys_are_the_decoded_fields() {
        assert_eq!(option_keys::<BashOptions>(), ["output_limit", "env"]);
        let decoded: BashOptions =
            serde_json::from_value(json!({"output_limit": 10, "env": {"A": "1"}})).unwrap();
        assert_eq!(decoded.output_limit, 10);
        assert_eq!(decoded.env["A"], "1");
        let err = serde_json::from_value::<BashOptions>(json!({"output_limit": 0})).unwrap_err();
        assert!(err.to_string().contains("at least 1") || err.to_string().contains("positive"), "{err}");
    }
}

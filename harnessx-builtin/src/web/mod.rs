//! The `web` bundle: `fetch_url`, which fetches a page and returns it as text (HTML as
//! Markdown) or, for a PNG, JPEG, GIF or WebP image, as an image part, and cannot be
//! turned against the machine it runs on.
//!
//! Three ways in, one tool:
//! - directly, as [`FetchUrl`] (or [`tool`]`("fetch_url")`): the model sees `url` and
//!   `max_length`;
//! - [`register_web_tools`] or `registry.load_builtin("web", ..)` with [`WebOptions`]: a
//!   `max_length` option fixes the limit and hides it from the model, which then sees only
//!   `url`.
//!
//! Only `http` and `https`; every address a connection goes to is checked, in the
//! resolver the client connects through and on each redirect hop, and loopback, private,
//! link-local (cloud metadata), CGNAT, multicast, reserved and unique-local addresses are
//! refused with one line, unless [`WebOptions::allow_private`] or
//! [`WebOptions::allow_hosts`] opens them. Proxy environment variables are ignored.
//! `fetch_url` is annotated read-only and open-world, concurrent, `manual` to replay, with
//! its own 60 s timeout. See `docs/builtin-web.md`.
//!
//! ```
//! use harnessx_builtin::web::{WebOptions, register_web_tools};
//! use harnessx_core::ToolRegistry;
//! use harnessx_core::catalog::CommonOptions;
//!
//! let registry = ToolRegistry::new();
//! let include = CommonOptions { include: Some(vec!["fetch_url".into()]), ..Default::default() };
//! let options = WebOptions { common: include, max_length: Some(20_000), ..Default::default() };
//! assert_eq!(register_web_tools(&registry, options).unwrap(), ["fetch_url"]);
//! let schema = registry.get_tool("fetch_url").unwrap().input_schema;
//! assert_eq!(schema["properties"].as_object().unwrap().keys().collect::<Vec<_>>(), ["url"]);
//! ```

mod convert;
mod fetch;
pub mod guard;
mod image;
mod parse;

use std::sync::{Arc, OnceLock};

use harnessx_core::catalog::{BuiltinBundle, BundleOptions, CommonOptions, select_tools};
use harnessx_core::{
    IntoToolDefinition, RegistryError, ReplayPolicy, ToolAnnotations, ToolDefinition, ToolHandler,
    ToolRegistry,
};
use serde::Deserialize;
use serde_json::{Value, json};

pub use convert::html_to_markdown;
use guard::{Access, HostRule};

/// The bundle name.
pub const BUNDLE: &str = "web";

/// The tools of the bundle.
pub const WEB_TOOLS: [&str; 1] = ["fetch_url"];

/// `fetch_url`'s own timeout, in seconds; `ToolPolicy` does not change it.
pub const FETCH_URL_TIMEOUT_SECONDS: f64 = 60.0;

/// The `max_length` the model gets when it passes none: 20,000 characters.
pub const DEFAULT_MAX_LENGTH: usize = 20_000;

/// Default [`WebOptions::max_bytes`]: 5 MiB of (decompressed) body.
pub const DEFAULT_MAX_BYTES: usize = 5 * 1024 * 1024;

/// Default [`WebOptions::max_redirects`].
pub const DEFAULT_MAX_REDIRECTS: usize = 10;

/// Fetching reads the world and changes nothing the tool knows of.
const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(true);

/// Options of [`register_web_tools`] and of `load_builtin("web", ..)`, which decodes
/// every field but `common` from its map. The model sees none of them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebOptions {
    /// `include`, `exclude`, `permission`, `replace` (decoded by the catalog).
    #[serde(skip)]
    pub common: CommonOptions,
    /// A fixed limit on the characters returned; set, it is hidden from the model.
    /// `None`: the model may pass `max_length` (default [`DEFAULT_MAX_LENGTH`]).
    #[serde(deserialize_with = "positive_some")]
    pub max_length: Option<usize>,
    /// Most bytes of (decompressed) body downloaded; reaching it stops the download and
    /// the result says so. An image over it is refused, never cut short. Never visible to
    /// the model.
    #[serde(deserialize_with = "harnessx_core::catalog::positive")]
    pub max_bytes: usize,
    /// Most redirects followed for one fetch.
    pub max_redirects: usize,
    /// Reach every address, loopback and private included.
    pub allow_private: bool,
    /// Hosts (`intranet.example`, `.example` for subdomains too) and address ranges
    /// (`10.0.0.0/8`, `::1`) reachable even when not public.
    pub allow_hosts: Vec<String>,
    /// A proxy for every request (`http://proxy:3128`). Without it, none is used, whatever
    /// `HTTP_PROXY` and friends say. Through a proxy, names are resolved by the proxy, so
    /// only literal addresses are checked here.
    pub proxy: Option<String>,
    /// The `User-Agent` header.
    pub user_agent: String,
}

fn positive_some<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    let value = Option::<usize>::deserialize(d)?;
    if value == Some(0) {
        return Err(serde::de::Error::custom("must be a positive integer, got 0"));
    }
    Ok(value)
}

impl Default for WebOptions {
    fn default() -> Self {
        Self {
            common: CommonOptions::default(),
            max_length: None,
            max_bytes: DEFAULT_MAX_BYTES,
            max_redirects: DEFAULT_MAX_REDIRECTS,
            allow_private: false,
            allow_hosts: Vec::new(),
            proxy: None,
            user_agent: concat!("harnessx/", env!("CARGO_PKG_VERSION"), " (fetch_url)").to_owned(),
        }
    }
}

impl BundleOptions for WebOptions {
    fn set_common(&mut self, common: CommonOptions) {
        self.common = common;
    }

    fn register(self, registry: &ToolRegistry) -> Result<Vec<String>, RegistryError> {
        register_web_tools(registry, self)
    }
}

inventory::submit! {
    BuiltinBundle::new::<WebOptions>(BUNDLE, &WEB_TOOLS)
}

/// `fetch_url` as a value to register directly: the model sees `url` and `max_length`.
///
/// ```
/// use harnessx_builtin::web::FetchUrl;
/// use harnessx_core::ToolRegistry;
///
/// let registry = ToolRegistry::new();
/// registry.register_tool(FetchUrl::new()).unwrap();
/// let schema = registry.get_tool("fetch_url").unwrap().input_schema;
/// assert_eq!(schema["properties"].as_object().unwrap().keys().collect::<Vec<_>>(), ["url", "max_length"]);
/// // Reaching a service on this machine takes an explicit opt-in:
/// let local = FetchUrl::new().allow_host("127.0.0.1".parse().unwrap());
/// registry.register_tool_with(local, harnessx_core::ToolOptions::new().replace(true)).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct FetchUrl {
    access: Access,
    max_bytes: usize,
    max_redirects: usize,
    proxy: Option<String>,
    user_agent: String,
}

impl Default for FetchUrl {
    fn default() -> Self {
        Self::new()
    }
}

impl FetchUrl {
    /// Public addresses only, the default limits.
    pub fn new() -> Self {
        let d = WebOptions::default();
        Self {
            access: Access::default(),
            max_bytes: d.max_bytes,
            max_redirects: d.max_redirects,
            proxy: None,
            user_agent: d.user_agent,
        }
    }

    /// Reach every address, loopback and private included.
    pub fn allow_private(mut self, allow: bool) -> Self {
        self.access.allow_private = allow;
        self
    }

    /// Reach this host or range even when it is not public.
    pub fn allow_host(mut self, rule: HostRule) -> Self {
        self.access.allow_hosts.push(rule);
        self
    }

    /// Most bytes of body downloaded (at least 1).
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes.max(1);
        self
    }

    /// Most redirects followed.
    pub fn max_redirects(mut self, hops: usize) -> Self {
        self.max_redirects = hops;
        self
    }

    /// The definition, with the model-visible `max_length` (or, with `fixed`, that limit
    /// hidden).
    fn build(self, fixed: Option<usize>) -> ToolDefinition {
        let config = fetch::Config {
            access: self.access,
            max_length: fixed,
            default_max_length: DEFAULT_MAX_LENGTH,
            max_bytes: self.max_bytes,
            max_redirects: self.max_redirects,
            proxy: self.proxy,
            user_agent: self.user_agent,
        };
        let handler = fetch::FetchHandler { config: Arc::new(config), client: OnceLock::new() };
        ToolDefinition::new(
            "fetch_url",
            fetch::DESCRIPTION,
            schema(fixed.is_none()),
            ToolHandler::Async(Arc::new(handler)),
        )
        .with_concurrent(true)
        .with_replay_policy(ReplayPolicy::Manual)
        .with_timeout_seconds(FETCH_URL_TIMEOUT_SECONDS)
        .with_annotations(ANNOTATIONS)
    }

    /// The tool definition (what registering a `FetchUrl` registers).
    pub fn definition(self) -> ToolDefinition {
        self.build(None)
    }
}

impl IntoToolDefinition for FetchUrl {
    fn into_tool_definition(self) -> ToolDefinition {
        self.definition()
    }
}

/// One web tool as a plain definition, for the direct-registration style: public
/// addresses only, default limits, `max_length` visible. `None` for a name outside
/// [`WEB_TOOLS`].
pub fn tool(name: &str) -> Option<ToolDefinition> {
    (name == "fetch_url").then(|| FetchUrl::new().definition())
}

fn schema(with_max_length: bool) -> Value {
    let mut properties = json!({
        "url": {
            "type": "string",
            "minLength": 1,
            "description": "The http or https URL to fetch."
        }
    });
    if with_max_length {
        properties["max_length"] = json!({
            "type": "integer",
            "minimum": 1,
            "description": format!("Most characters of text to return (default {DEFAULT_MAX_LENGTH}); longer pages are cut at a paragraph or line break.")
        });
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": ["url"],
        "additionalProperties": false
    })
}

/// Registers the selected web tools (`fetch_url`) on `registry`; returns the names
/// registered.
///
/// Fails, registering nothing, when `include`/`exclude` name an unknown tool or select
/// nothing, an `allow_hosts` entry is neither a host nor a range, or (without `replace`)
/// `fetch_url` is already registered.
pub fn register_web_tools(
    registry: &ToolRegistry,
    options: WebOptions,
) -> Result<Vec<String>, RegistryError> {
    let common = &options.common;
    let selected = select_tools("web tool", &WEB_TOOLS, common.include.as_deref(), &common.exclude)?;
    let mut allow_hosts = Vec::with_capacity(options.allow_hosts.len());
    for entry in &options.allow_hosts {
        allow_hosts.push(
            entry
                .parse::<HostRule>()
                .map_err(|e| RegistryError::InvalidOption(format!("allow_hosts: {e}")))?,
        );
    }
    if options.max_bytes == 0 {
        return Err(RegistryError::InvalidOption("max_bytes must be at least 1".into()));
    }
    if !common.replace {
        registry.ensure_free(&selected)?;
    }
    let fetch_url = FetchUrl {
        access: Access { allow_private: options.allow_private, allow_hosts },
        max_bytes: options.max_bytes,
        max_redirects: options.max_redirects,
        proxy: options.proxy.clone(),
        user_agent: options.user_agent.clone(),
    };
    let def = fetch_url.build(options.max_length);
    Ok(vec![registry.register_tool_with(def, common.tool_options())?.name])
}

#[cfg(test)]
mod tests {
    use harnessx_core::catalog::option_keys;

    use super::*;

    #[test]
    fn the_map_keys_are_the_decoded_fields() {
        assert_eq!(
            option_keys::<WebOptions>(),
            [
                "max_length",
                "max_bytes",
                "max_redirects",
                "allow_private",
                "allow_hosts",
                "proxy",
                "user_agent"
            ]
        );
        let decoded: WebOptions =
            serde_json::from_value(json!({"max_length": 10, "allow_hosts": ["10.0.0.0/8"]})).unwrap();
        assert_eq!(decoded.max_length, Some(10));
        assert!(serde_json::from_value::<WebOptions>(json!({"max_length": 0})).is_err());
        assert!(serde_json::from_value::<WebOptions>(json!({"max_bytes": 0})).is_err());
    }

    #[test]
    fn a_bad_allow_hosts_entry_registers_nothing() {
        let registry = ToolRegistry::new();
        let options = WebOptions { allow_hosts: vec!["not a host!".into()], ..Default::default() };
        let err = register_web_tools(&registry, options).unwrap_err();
        assert!(err.to_string().contains("allow_hosts"), "{err}");
        assert!(registry.is_empty());
    }
}

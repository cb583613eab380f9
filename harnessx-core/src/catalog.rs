//! The built-in catalog: how `"read_file"`, `"filesystem"` or `"all"` resolve from a
//! `&str` without this crate depending on `harnessx-builtin`.
//!
//! A crate that ships bundles submits one [`BuiltinBundle`] per bundle with
//! [`inventory::submit!`]; [`ToolRegistry::load_builtin`] looks names up in what was
//! submitted. The options are data: the four every bundle shares (`include`, `exclude`,
//! `permission`, `replace`) are the struct [`CommonOptions`], decoded here, and each
//! bundle's own are its options struct (a [`BundleOptions`]), from whose `Deserialize`
//! impl the valid keys are read. So every bundle rejects unknown keys and wrong types the
//! same way, and no list of keys is kept by hand.
//!
//! # Adding a bundle
//!
//! One options struct and one register function: the struct derives `Deserialize` over
//! the bundle's own keys (`deny_unknown_fields`, `default`) and holds the common options
//! in a `#[serde(skip)]` field; the function is the bundle's `register_*_tools` helper,
//! and `load_builtin` ends up in it with the same struct.
//!
//! ```
//! use harnessx_core::catalog::{BuiltinBundle, BundleOptions, CommonOptions, select_tools};
//! use harnessx_core::{RegistryError, ToolRegistry};
//! use serde::Deserialize;
//!
//! /// The bundle's tools, in registration order.
//! pub const CLOCK_TOOLS: [&str; 2] = ["now", "sleep"];
//!
//! /// Options of [`register_clock_tools`]: the common ones, and the bundle's own keys.
//! #[derive(Debug, Clone, PartialEq, Deserialize)]
//! #[serde(default, deny_unknown_fields)]
//! pub struct ClockOptions {
//!     /// `include`, `exclude`, `permission`, `replace` (decoded by the catalog).
//!     #[serde(skip)]
//!     pub common: CommonOptions,
//!     /// The time zone `now` answers in.
//!     pub zone: String,
//!     /// The longest `sleep`, in seconds.
//!     #[serde(deserialize_with = "harnessx_core::catalog::positive")]
//!     pub max_sleep_seconds: u64,
//! }
//!
//! impl Default for ClockOptions {
//!     fn default() -> Self {
//!         Self { common: CommonOptions::default(), zone: "UTC".into(), max_sleep_seconds: 60 }
//!     }
//! }
//!
//! impl BundleOptions for ClockOptions {
//!     fn set_common(&mut self, common: CommonOptions) {
//!         self.common = common;
//!     }
//!     fn register(self, registry: &ToolRegistry) -> Result<Vec<String>, RegistryError> {
//!         register_clock_tools(registry, self)
//!     }
//! }
//!
//! /// Registers the selected clock tools; returns their names.
//! pub fn register_clock_tools(registry: &ToolRegistry, options: ClockOptions) -> Result<Vec<String>, RegistryError> {
//!     let common = &options.common;
//!     let selected = select_tools("clock tool", &CLOCK_TOOLS, common.include.as_deref(), &common.exclude)?;
//!     // A real bundle builds each selected tool from `options` and registers it with
//!     // `registry.register_tool_with(definition, ToolOptions::new().replace(common.replace))`.
//!     let _ = registry;
//!     Ok(selected.into_iter().map(str::to_owned).collect())
//! }
//!
//! inventory::submit! { BuiltinBundle::new::<ClockOptions>("clock", &CLOCK_TOOLS) }
//!
//! // Both ways in take the same struct.
//! let registry = ToolRegistry::new();
//! let typed = ClockOptions { zone: "Europe/Paris".into(), ..Default::default() };
//! assert_eq!(register_clock_tools(&registry, typed).unwrap(), ["now", "sleep"]);
//! let by_name = registry.load_builtin("clock", serde_json::json!({"zone": "Europe/Paris", "exclude": ["sleep"]}));
//! assert_eq!(by_name.unwrap(), ["now"]);
//!
//! // The keys come from the struct; a wrong value names the option and the expected type.
//! let err = registry.load_builtin("clock", serde_json::json!({"zone": 1})).unwrap_err();
//! assert_eq!(err.to_string(), "option `zone` of the clock bundle must be a string, got 1");
//! let err = registry.load_builtin("sleep", serde_json::json!({"max_sleep_seconds": 0})).unwrap_err();
//! assert_eq!(err.to_string(), "option `max_sleep_seconds` of the clock bundle must be a positive integer, got 0");
//! let err = registry.load_builtin("sleep", serde_json::json!({"exclude": ["now"]})).unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "unknown option `exclude` for built-in \"sleep\"; valid options: permission, replace, zone, max_sleep_seconds"
//! );
//! ```
//!
//! # Linking
//!
//! Submissions live in the submitting crate's object code. A binary that never refers to
//! `harnessx-builtin` may have it dropped by the linker, and then the catalog is empty.
//! Depend on the `harnessx` facade (which refers to it), or call `harnessx_builtin::link()`
//! once at start-up. An empty catalog says so in its error message.

mod decode;
mod options;

use std::fmt;

use serde_json::{Map, Value};

pub use self::options::{BuiltinOptions, BundleOptions, CommonOptions, OptionKeys, option_keys, positive};
use crate::error::RegistryError;
use crate::permission::PermissionLevel;
use crate::registry::ToolRegistry;

/// The bundle name that stands for every submitted bundle.
pub const ALL_BUNDLE: &str = "all";

/// One bundle of built-in tools, as a crate submits it to the catalog: its name, its
/// tools, and its options struct, from which both the option keys and the register
/// function come (see the [module documentation](crate::catalog) for a whole bundle).
///
/// ```
/// use harnessx_core::catalog::{BuiltinBundle, BundleOptions, CommonOptions};
/// use harnessx_core::{RegistryError, ToolRegistry};
///
/// #[derive(Default, serde::Deserialize)]
/// #[serde(default, deny_unknown_fields)]
/// struct DemoOptions {
///     #[serde(skip)]
///     common: CommonOptions,
///     level: u32,
/// }
///
/// impl BundleOptions for DemoOptions {
///     fn set_common(&mut self, common: CommonOptions) {
///         self.common = common;
///     }
///     fn register(self, _registry: &ToolRegistry) -> Result<Vec<String>, RegistryError> {
///         // A real bundle registers the tools `self.common.include` names.
///         Ok(self.common.include.unwrap_or_default())
///     }
/// }
///
/// inventory::submit! { BuiltinBundle::new::<DemoOptions>("demo", &["demo_a", "demo_b"]) }
///
/// let registry = ToolRegistry::new();
/// let loaded = registry.load_builtin("demo", serde_json::json!({"level": 3, "exclude": ["demo_a"]}));
/// assert_eq!(loaded.unwrap(), ["demo_b"]);
/// assert_eq!(registry.load_builtin("demo_a", serde_json::json!({})).unwrap(), ["demo_a"]);
/// let err = registry.load_builtin("demo", serde_json::json!({"levle": 3})).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "unknown option `levle` for built-in \"demo\"; valid options: include, exclude, permission, replace, level"
/// );
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct BuiltinBundle {
    /// The bundle name (`"filesystem"`).
    pub name: &'static str,
    /// The tools it holds, in registration order.
    pub tools: &'static [&'static str],
    /// The bundle's own option keys (beyond the [`CommonOptions`]), read from its options
    /// struct.
    pub options: OptionKeys,
    /// Registers the selected tools. The catalog has already checked the selection
    /// (names in `tools`, not empty) and the option keys (only this bundle's own are in
    /// [`BundleRequest::options`]); the function decodes the option values.
    pub register: fn(&ToolRegistry, &BundleRequest<'_>) -> Result<Vec<String>, RegistryError>,
}

impl BuiltinBundle {
    /// The bundle `name` holding `tools`, whose options are `T`: its keys are
    /// `T`'s fields, and loading it decodes a `T` and calls [`BundleOptions::register`].
    pub const fn new<T: BundleOptions>(name: &'static str, tools: &'static [&'static str]) -> Self {
        Self { name, tools, options: OptionKeys::of::<T>(), register: register_with::<T> }
    }
}

/// The catalog's entry point of a bundle whose options are `T`.
fn register_with<T: BundleOptions>(
    registry: &ToolRegistry,
    request: &BundleRequest<'_>,
) -> Result<Vec<String>, RegistryError> {
    request.decode::<T>()?.register(registry)
}

inventory::collect!(BuiltinBundle);

/// What the catalog hands a bundle's register function.
#[derive(Debug)]
#[non_exhaustive]
pub struct BundleRequest<'a> {
    /// The bundle's name.
    pub bundle: &'static str,
    /// The tools to register (a non-empty subset of the bundle's, in bundle order).
    pub tools: Vec<&'static str>,
    /// Explicit permission for every tool registered, or `None` to inherit the manager's.
    pub permission: Option<PermissionLevel>,
    /// Replace tools of the same names instead of failing.
    pub replace: bool,
    /// The bundle's own options, keys already checked against [`BuiltinBundle::options`].
    pub options: &'a Map<String, Value>,
}

impl BundleRequest<'_> {
    /// The bundle's options struct: decoded from [`options`](Self::options), with the
    /// common options set (`include` being [`tools`](Self::tools)). A value of the wrong
    /// type fails with a message naming the option and the type expected.
    pub fn decode<T: BundleOptions>(&self) -> Result<T, RegistryError> {
        let mut options: T =
            decode::from_map(self.options).map_err(|e| e.into_registry_error(Some(self.bundle)))?;
        options.set_common(CommonOptions {
            include: Some(self.tools.iter().map(|t| (*t).to_owned()).collect()),
            exclude: Vec::new(),
            permission: self.permission,
            replace: self.replace,
        });
        Ok(options)
    }
}

/// What a built-in name resolves to.
#[derive(Clone, Copy)]
pub enum BuiltinItem {
    /// A single tool of a bundle.
    Tool {
        /// The tool name.
        name: &'static str,
        /// The bundle that holds it.
        bundle: &'static BuiltinBundle,
    },
    /// A whole bundle.
    Bundle(&'static BuiltinBundle),
    /// `"all"`: every bundle.
    All,
}

impl fmt::Debug for BuiltinItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tool { name, bundle } => write!(f, "Tool({name} in {})", bundle.name),
            Self::Bundle(b) => write!(f, "Bundle({})", b.name),
            Self::All => f.write_str("All"),
        }
    }
}

/// The order the spec lists the built-in bundles in; `"all"` registers them in this order.
pub const BUNDLE_ORDER: [&str; 5] = ["filesystem", "bash", "web", "memory", "planning"];

/// Every submitted bundle, in [`BUNDLE_ORDER`], then any others by name (submission order
/// is unspecified).
pub fn bundles() -> Vec<&'static BuiltinBundle> {
    let mut all: Vec<&'static BuiltinBundle> = inventory::iter::<BuiltinBundle>.into_iter().collect();
    let rank = |name: &str| BUNDLE_ORDER.iter().position(|n| *n == name).unwrap_or(BUNDLE_ORDER.len());
    all.sort_by(|a, b| rank(a.name).cmp(&rank(b.name)).then(a.name.cmp(b.name)));
    all
}

/// Every name [`ToolRegistry::load_builtin`] accepts: tools in bundle order, then the
/// bundle names, then `"all"`. Empty when no bundle crate is linked.
pub fn known_names() -> Vec<&'static str> {
    let bundles = bundles();
    if bundles.is_empty() {
        return Vec::new();
    }
    let mut names: Vec<&'static str> = bundles.iter().flat_map(|b| b.tools.iter().copied()).collect();
    names.extend(bundles.iter().map(|b| b.name));
    names.push(ALL_BUNDLE);
    names
}

/// Resolves a built-in tool or bundle name. A bundle name wins over a tool of the same
/// name (none clash today).
pub fn resolve(name: &str) -> Result<BuiltinItem, RegistryError> {
    let bundles = bundles();
    if name == ALL_BUNDLE && !bundles.is_empty() {
        return Ok(BuiltinItem::All);
    }
    if let Some(b) = bundles.iter().find(|b| b.name == name) {
        return Ok(BuiltinItem::Bundle(b));
    }
    for b in &bundles {
        if let Some(t) = b.tools.iter().find(|t| **t == name) {
            return Ok(BuiltinItem::Tool { name: t, bundle: b });
        }
    }
    Err(unknown("built-in tool or bundle", name, &known_names()))
}

fn unknown(kind: &'static str, name: &str, known: &[&str]) -> RegistryError {
    let known = if known.is_empty() {
        "none: no built-in bundle is linked into this program (depend on the `harnessx` facade, \
         or call `harnessx_builtin::link()` at start-up)"
            .to_owned()
    } else {
        known.join(", ")
    };
    RegistryError::Unknown { kind, name: name.to_owned(), known }
}

/// Selects tools from `available` by `include` (all when `None`) then `exclude`; every
/// name in either must exist, and the selection must not end up empty. `kind` names the
/// tools in messages (`"filesystem tool"`).
///
/// Bundle helpers share this so their filters fail the same way the catalog's do.
pub fn select_tools(
    kind: &'static str,
    available: &[&'static str],
    include: Option<&[String]>,
    exclude: &[String],
) -> Result<Vec<&'static str>, RegistryError> {
    for name in include.unwrap_or_default().iter().chain(exclude) {
        if !available.contains(&name.as_str()) {
            return Err(unknown(kind, name, available));
        }
    }
    let selected: Vec<&'static str> = available
        .iter()
        .copied()
        .filter(|t| include.is_none_or(|inc| inc.iter().any(|i| i == t)))
        .filter(|t| !exclude.iter().any(|e| e == t))
        .collect();
    if selected.is_empty() {
        return Err(RegistryError::InvalidOption(format!(
            "the include/exclude filters leave no {kind} to register; available: {}",
            available.join(", ")
        )));
    }
    Ok(selected)
}

/// The option keys valid for `bundles`: the common ones (without the filters for a single
/// tool), then each bundle's own, in field order.
fn valid_keys(bundles: &[&BuiltinBundle], with_filters: bool) -> Vec<&'static str> {
    let mut keys: Vec<&'static str> =
        option_keys::<CommonOptions>().iter().copied().filter(|k| with_filters || !is_filter(k)).collect();
    for b in bundles {
        for k in b.options.iter() {
            if !keys.contains(k) {
                keys.push(k);
            }
        }
    }
    keys
}

/// `include` and `exclude` select among a bundle's tools, so a single tool does not take
/// them.
fn is_filter(key: &str) -> bool {
    matches!(key, "include" | "exclude")
}

/// Loads a built-in tool or bundle into `registry` (the body of
/// [`ToolRegistry::load_builtin`]).
pub(crate) fn load(
    registry: &ToolRegistry,
    name_or_bundle: &str,
    options: BuiltinOptions,
) -> Result<Vec<String>, RegistryError> {
    let item = resolve(name_or_bundle)?;
    let map = options.into_map()?;
    let targets: Vec<&'static BuiltinBundle> = match item {
        BuiltinItem::Tool { bundle, .. } | BuiltinItem::Bundle(bundle) => vec![bundle],
        BuiltinItem::All => bundles(),
    };
    let single_tool = matches!(item, BuiltinItem::Tool { .. });
    let valid = valid_keys(&targets, !single_tool);
    if let Some(key) = map.keys().find(|k| !valid.contains(&k.as_str())) {
        return Err(RegistryError::InvalidOption(format!(
            "unknown option `{key}` for built-in \"{name_or_bundle}\"; valid options: {}",
            valid.join(", ")
        )));
    }
    let common_keys = option_keys::<CommonOptions>();
    let (common, bundles_own): (Map<String, Value>, Map<String, Value>) =
        map.into_iter().partition(|(k, _)| common_keys.contains(&k.as_str()));
    let common: CommonOptions = decode::from_map(&common).map_err(|e| e.into_registry_error(None))?;
    let all_tools: Vec<&'static str> = match item {
        BuiltinItem::Tool { name, .. } => vec![name],
        _ => targets.iter().flat_map(|b| b.tools.iter().copied()).collect(),
    };
    let selected = select_tools("built-in tool", &all_tools, common.include.as_deref(), &common.exclude)?;
    // Check every name is free before registering any, so a clash leaves nothing half-loaded.
    if !common.replace {
        registry.ensure_free(&selected)?;
    }
    let mut registered = Vec::new();
    for bundle in targets {
        let tools: Vec<&'static str> =
            bundle.tools.iter().copied().filter(|t| selected.contains(t)).collect();
        if tools.is_empty() {
            continue;
        }
        let own: Map<String, Value> = bundles_own
            .iter()
            .filter(|(k, _)| bundle.options.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let request = BundleRequest {
            bundle: bundle.name,
            tools,
            permission: common.permission,
            replace: common.replace,
            options: &own,
        };
        registered.extend((bundle.register)(registry, &request)?);
    }
    Ok(registered)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: [&str; 3] = ["a", "b", "c"];

    #[test]
    fn selection_filters_and_fails_on_unknown_names() {
        let inc = vec!["c".to_owned(), "a".to_owned()];
        assert_eq!(select_tools("x", &TOOLS, Some(&inc), &[]).unwrap(), ["a", "c"]);
        assert_eq!(select_tools("x", &TOOLS, None, &["b".to_owned()]).unwrap(), ["a", "c"]);
        let err = select_tools("x", &TOOLS, None, &["d".to_owned()]).unwrap_err().to_string();
        assert_eq!(err, "unknown x \"d\"; known: a, b, c");
        let err = select_tools("x", &TOOLS, Some(&[]), &[]).unwrap_err().to_string();
        assert!(err.contains("leave no"), "{err}");
    }

    #[test]
    fn common_options_are_decoded_and_typed() {
        let map = serde_json::json!({"include": ["a"], "permission": "ASK", "replace": true});
        let c: CommonOptions = decode::from_map(map.as_object().unwrap()).unwrap();
        assert_eq!(c.include.unwrap(), ["a"]);
        assert_eq!(c.permission, Some(PermissionLevel::Ask));
        assert!(c.replace);
        let bad = |v: Value| {
            decode::from_map::<CommonOptions>(v.as_object().unwrap())
                .unwrap_err()
                .into_registry_error(None)
                .to_string()
        };
        assert_eq!(
            bad(serde_json::json!({"replace": "yes"})),
            "option `replace` must be a boolean, got \"yes\""
        );
        assert_eq!(
            bad(serde_json::json!({"include": "a"})),
            "option `include` must be a sequence, got \"a\""
        );
        assert_eq!(
            bad(serde_json::json!({"permission": "maybe"})),
            "option `permission`: invalid permission \"maybe\": expected one of allow, ask, deny"
        );
    }

    #[test]
    fn the_common_keys_come_from_the_struct_filters_first() {
        assert_eq!(option_keys::<CommonOptions>(), ["include", "exclude", "permission", "replace"]);
        assert_eq!(valid_keys(&[], false), ["permission", "replace"]);
    }
}

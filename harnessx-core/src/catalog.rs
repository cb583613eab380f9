//! The built-in catalog: how `"read_file"`, `"filesystem"` or `"all"` resolve from a
//! `&str` without this crate depending on `harnessx-builtin`.
//!
//! A crate that ships bundles submits one [`BuiltinBundle`] per bundle with
//! [`inventory::submit!`]; [`ToolRegistry::load_builtin`] looks names up in what was
//! submitted. The names a bundle accepts as options, and the four every bundle shares
//! (`include`, `exclude`, `permission`, `replace`), are checked here, so every bundle
//! rejects unknown keys the same way.
//!
//! # Linking
//!
//! Submissions live in the submitting crate's object code. A binary that never refers to
//! `harnessx-builtin` may have it dropped by the linker, and then the catalog is empty.
//! Depend on the `harnessx` facade (which refers to it), or call `harnessx_builtin::link()`
//! once at start-up. An empty catalog says so in its error message.

use std::fmt;

use serde_json::{Map, Value};

use crate::error::RegistryError;
use crate::permission::PermissionLevel;
use crate::registry::ToolRegistry;

/// The bundle name that stands for every submitted bundle.
pub const ALL_BUNDLE: &str = "all";

/// The option keys every bundle accepts, checked by the catalog itself.
pub const COMMON_OPTIONS: [&str; 4] = ["include", "exclude", "permission", "replace"];

/// One bundle of built-in tools, as a crate submits it to the catalog.
///
/// ```
/// use harnessx_core::catalog::{BuiltinBundle, BundleRequest};
/// use harnessx_core::{RegistryError, ToolRegistry};
///
/// fn register(_registry: &ToolRegistry, request: &BundleRequest<'_>) -> Result<Vec<String>, RegistryError> {
///     // A real bundle checks `request.options` and registers `request.tools` here.
///     Ok(request.tools.iter().map(|t| t.to_string()).collect())
/// }
///
/// inventory::submit! {
///     BuiltinBundle { name: "demo", tools: &["demo_a", "demo_b"], options: &["level"], register }
/// }
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
pub struct BuiltinBundle {
    /// The bundle name (`"filesystem"`).
    pub name: &'static str,
    /// The tools it holds, in registration order.
    pub tools: &'static [&'static str],
    /// The bundle's own option keys (beyond [`COMMON_OPTIONS`]).
    pub options: &'static [&'static str],
    /// Registers the selected tools. The catalog has already checked the selection
    /// (names in `tools`, not empty) and the option keys (only this bundle's own are in
    /// [`BundleRequest::options`]); the function checks the option values.
    pub register: fn(&ToolRegistry, &BundleRequest<'_>) -> Result<Vec<String>, RegistryError>,
}

inventory::collect!(BuiltinBundle);

/// What the catalog hands a bundle's register function.
#[derive(Debug)]
#[non_exhaustive]
pub struct BundleRequest<'a> {
    /// The tools to register (a non-empty subset of the bundle's, in bundle order).
    pub tools: Vec<&'static str>,
    /// Explicit permission for every tool registered, or `None` to inherit the manager's.
    pub permission: Option<PermissionLevel>,
    /// Replace tools of the same names instead of failing.
    pub replace: bool,
    /// The bundle's own options, keys already checked against [`BuiltinBundle::options`].
    pub options: &'a Map<String, Value>,
}

/// Options for [`ToolRegistry::load_builtin`] in dynamic form: a JSON (or TOML-like) map
/// with the same keys as the bundle helper's options struct.
///
/// ```
/// use harnessx_core::catalog::BuiltinOptions;
/// use serde_json::json;
///
/// let options = BuiltinOptions::from(json!({"base_path": ".", "max_read_bytes": 100_000}));
/// let same = BuiltinOptions::new().set("base_path", ".").set("max_read_bytes", 100_000);
/// assert_eq!(options, same);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BuiltinOptions {
    value: Value,
}

impl BuiltinOptions {
    /// No options: every default.
    pub fn new() -> Self {
        Self { value: Value::Object(Map::new()) }
    }

    /// Sets one option.
    pub fn set(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        if !self.value.is_object() {
            self.value = Value::Object(Map::new());
        }
        if let Value::Object(map) = &mut self.value {
            map.insert(key.into(), value.into());
        }
        self
    }

    fn into_map(self) -> Result<Map<String, Value>, RegistryError> {
        match self.value {
            Value::Object(map) => Ok(map),
            Value::Null => Ok(Map::new()),
            other => Err(RegistryError::InvalidOption(format!(
                "built-in options must be a map of option names to values, got {}",
                crate::schema::kind_of(&other)
            ))),
        }
    }
}

impl From<Map<String, Value>> for BuiltinOptions {
    fn from(map: Map<String, Value>) -> Self {
        Self { value: Value::Object(map) }
    }
}

impl From<&Map<String, Value>> for BuiltinOptions {
    fn from(map: &Map<String, Value>) -> Self {
        Self::from(map.clone())
    }
}

/// A JSON value; anything but an object (or `null`, meaning no options) is refused when
/// it is loaded.
impl From<Value> for BuiltinOptions {
    fn from(value: Value) -> Self {
        Self { value }
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

/// Every submitted bundle, sorted by name (submission order is unspecified).
pub fn bundles() -> Vec<&'static BuiltinBundle> {
    let mut all: Vec<&'static BuiltinBundle> = inventory::iter::<BuiltinBundle>.into_iter().collect();
    all.sort_by_key(|b| b.name);
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

/// The common options, parsed.
#[derive(Debug)]
struct Common {
    include: Option<Vec<String>>,
    exclude: Vec<String>,
    permission: Option<PermissionLevel>,
    replace: bool,
}

fn string_list(key: &str, value: &Value) -> Result<Vec<String>, RegistryError> {
    let bad =
        || RegistryError::InvalidOption(format!("option `{key}` must be a list of tool names, got {value}"));
    match value {
        Value::Array(items) => items.iter().map(|v| v.as_str().map(str::to_owned).ok_or_else(bad)).collect(),
        _ => Err(bad()),
    }
}

fn take_common(map: &mut Map<String, Value>) -> Result<Common, RegistryError> {
    let include = map.remove("include").map(|v| string_list("include", &v)).transpose()?;
    let exclude = map.remove("exclude").map(|v| string_list("exclude", &v)).transpose()?.unwrap_or_default();
    let permission = match map.remove("permission") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(
            s.parse::<PermissionLevel>()
                .map_err(|e| RegistryError::InvalidOption(format!("option `permission`: {e}")))?,
        ),
        Some(other) => {
            return Err(RegistryError::InvalidOption(format!(
                "option `permission` must be one of \"allow\", \"ask\", \"deny\", got {other}"
            )));
        }
    };
    let replace = match map.remove("replace") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(other) => {
            return Err(RegistryError::InvalidOption(format!(
                "option `replace` must be true or false, got {other}"
            )));
        }
    };
    Ok(Common { include, exclude, permission, replace })
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

fn valid_keys(bundles: &[&BuiltinBundle], with_filters: bool) -> String {
    let mut keys: Vec<&str> = COMMON_OPTIONS
        .iter()
        .copied()
        .filter(|k| with_filters || !matches!(*k, "include" | "exclude"))
        .collect();
    for b in bundles {
        for k in b.options {
            if !keys.contains(k) {
                keys.push(k);
            }
        }
    }
    keys.join(", ")
}

impl ToolRegistry {
    /// Loads a built-in tool (`"read_file"`) or bundle (`"filesystem"`, `"all"`) by name,
    /// with the options its registration helper takes, in dynamic form. Returns the names
    /// registered.
    ///
    /// Options: `include` and `exclude` (lists of tool names; bundles only), `permission`
    /// (`"allow"`, `"ask"`, `"deny"`), `replace` (bool), plus the bundle's own
    /// (e.g. `base_path` for the filesystem bundle). For `"all"`, each bundle receives
    /// its own keys. An unknown name, an unknown key or a value of the wrong type fails,
    /// and the message names what is valid. Nothing is registered when loading fails
    /// before registration starts; see the bundle helpers for what they check up front.
    ///
    /// See [`BuiltinBundle`] for an example; `harnessx-builtin`'s bundles load the same way:
    /// `registry.load_builtin("read_file", json!({"base_path": "."}))`.
    pub fn load_builtin(
        &self,
        name_or_bundle: &str,
        options: impl Into<BuiltinOptions>,
    ) -> Result<Vec<String>, RegistryError> {
        let item = resolve(name_or_bundle)?;
        let mut map = options.into().into_map()?;
        let targets: Vec<&'static BuiltinBundle> = match item {
            BuiltinItem::Tool { bundle, .. } | BuiltinItem::Bundle(bundle) => vec![bundle],
            BuiltinItem::All => bundles(),
        };
        let single_tool = matches!(item, BuiltinItem::Tool { .. });
        for key in map.keys() {
            let known = COMMON_OPTIONS.contains(&key.as_str())
                || targets.iter().any(|b| b.options.contains(&key.as_str()));
            if !known || (single_tool && matches!(key.as_str(), "include" | "exclude")) {
                return Err(RegistryError::InvalidOption(format!(
                    "unknown option `{key}` for built-in \"{name_or_bundle}\"; valid options: {}",
                    valid_keys(&targets, !single_tool)
                )));
            }
        }
        let common = take_common(&mut map)?;
        let all_tools: Vec<&'static str> = match item {
            BuiltinItem::Tool { name, .. } => vec![name],
            _ => targets.iter().flat_map(|b| b.tools.iter().copied()).collect(),
        };
        let selected = select_tools("built-in tool", &all_tools, common.include.as_deref(), &common.exclude)?;
        // Check every name is free before registering any, so a clash leaves nothing half-loaded.
        if !common.replace
            && let Some(taken) = selected.iter().find(|t| self.contains(t))
        {
            return Err(RegistryError::DuplicateTool { name: (*taken).to_owned() });
        }
        let mut registered = Vec::new();
        for bundle in targets {
            let tools: Vec<&'static str> =
                bundle.tools.iter().copied().filter(|t| selected.contains(t)).collect();
            if tools.is_empty() {
                continue;
            }
            let own: Map<String, Value> = map
                .iter()
                .filter(|(k, _)| bundle.options.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let request = BundleRequest {
                tools,
                permission: common.permission,
                replace: common.replace,
                options: &own,
            };
            registered.extend((bundle.register)(self, &request)?);
        }
        Ok(registered)
    }
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
    fn common_options_are_parsed_and_typed() {
        let mut map = serde_json::json!({"include": ["a"], "permission": "ASK", "replace": true, "x": 1})
            .as_object()
            .unwrap()
            .clone();
        let c = take_common(&mut map).unwrap();
        assert_eq!(c.include.unwrap(), ["a"]);
        assert_eq!(c.permission, Some(PermissionLevel::Ask));
        assert!(c.replace);
        assert_eq!(map.keys().collect::<Vec<_>>(), ["x"]);
        let mut bad = serde_json::json!({"replace": "yes"}).as_object().unwrap().clone();
        assert!(take_common(&mut bad).is_err());
        let mut bad = serde_json::json!({"include": "a"}).as_object().unwrap().clone();
        assert!(take_common(&mut bad).unwrap_err().to_string().contains("list of tool names"));
    }

    #[test]
    fn options_must_be_a_map() {
        assert!(BuiltinOptions::from(serde_json::json!([1])).into_map().is_err());
        assert!(BuiltinOptions::from(Value::Null).into_map().unwrap().is_empty());
    }
}

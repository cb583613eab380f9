//! Bundle options as data: the options every bundle shares ([`CommonOptions`]), the trait a
//! bundle's own options struct implements ([`BundleOptions`]), the option keys read off
//! that struct ([`OptionKeys`]), and the dynamic form `load_builtin` takes
//! ([`BuiltinOptions`]).

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

use serde::de::{self, DeserializeOwned, Deserializer, Unexpected, Visitor};
use serde::{Deserialize, forward_to_deserialize_any};
use serde_json::{Map, Value};

use crate::error::RegistryError;
use crate::permission::PermissionLevel;
use crate::registry::ToolRegistry;

/// The options every bundle takes. The catalog decodes them from the keys `include`,
/// `exclude`, `permission` and `replace` of a `load_builtin` map, selects the tools, and
/// hands them to the bundle through [`BundleOptions::set_common`].
///
/// ```
/// use harnessx_core::PermissionLevel;
/// use harnessx_core::catalog::{CommonOptions, option_keys};
///
/// assert_eq!(option_keys::<CommonOptions>(), ["include", "exclude", "permission", "replace"]);
/// let common: CommonOptions = serde_json::from_value(serde_json::json!({"permission": "ask"})).unwrap();
/// assert_eq!(common, CommonOptions { permission: Some(PermissionLevel::Ask), ..Default::default() });
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommonOptions {
    /// Register only these tools (all when `None`). Unknown names fail. Not for a single
    /// tool.
    pub include: Option<Vec<String>>,
    /// Leave these tools out. Unknown names fail. Not for a single tool.
    pub exclude: Vec<String>,
    /// Explicit permission for every tool registered, or `None` to inherit the manager's
    /// default.
    pub permission: Option<PermissionLevel>,
    /// Replace tools of the same names instead of failing.
    pub replace: bool,
}

impl CommonOptions {
    /// What every tool of the bundle is registered with: `replace`, and `permission`
    /// when one is given (omitted, the manager's default applies).
    pub fn tool_options(&self) -> crate::tool::definition::ToolOptions {
        let mut options = crate::tool::definition::ToolOptions::new().replace(self.replace);
        options.permission = self.permission;
        options
    }
}

/// A bundle's options struct: `#[derive(Deserialize)]` with
/// `#[serde(default, deny_unknown_fields)]` over the bundle's own keys, holding the
/// [`CommonOptions`] too (a `#[serde(skip)]` field, which the catalog fills in through
/// [`set_common`](Self::set_common)). The struct is what the bundle's
/// `register_*_tools(registry, options)` helper takes, so loading by name and calling
/// the helper are one path. See the [module documentation](crate::catalog) for a bundle
/// written this way.
///
/// The common options are not `#[serde(flatten)]`ed in: serde does not check unknown
/// keys of a struct with a flattened field, and a flattened struct has no field list to
/// name the valid keys from.
pub trait BundleOptions: DeserializeOwned {
    /// Takes the common options the catalog decoded from the same map; `include` is the
    /// catalog's selection for this bundle, `exclude` is empty.
    fn set_common(&mut self, common: CommonOptions);

    /// Registers the bundle's tools with these options: the bundle's helper.
    fn register(self, registry: &ToolRegistry) -> Result<Vec<String>, RegistryError>;
}

/// The keys of an options struct, read from its `Deserialize` impl: the field names
/// (after `rename`, without `skip`ped fields, with aliases) that serde's derive passes to
/// `Deserializer::deserialize_struct`. Empty for a type that does not deserialize as a
/// struct with a field list (a map, or a struct with a `#[serde(flatten)]` field).
///
/// ```
/// # use serde::Deserialize;
/// #[derive(Deserialize)]
/// struct Demo {
///     level: u32,
///     #[serde(rename = "max-depth")]
///     max_depth: u32,
///     #[serde(skip)]
///     _internal: (),
/// }
/// assert_eq!(harnessx_core::catalog::option_keys::<Demo>(), ["level", "max-depth"]);
/// ```
pub fn option_keys<T: DeserializeOwned>() -> &'static [&'static str] {
    match T::deserialize(FieldNames) {
        Err(NotAStruct(Some(fields))) => fields,
        _ => &[],
    }
}

/// A deserializer that stops at `deserialize_struct`, reporting the field names.
struct FieldNames;

/// The stop: the field names, or `None` when the type asked for anything but a struct.
#[derive(Debug)]
struct NotAStruct(Option<&'static [&'static str]>);

impl fmt::Display for NotAStruct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a struct")
    }
}

impl std::error::Error for NotAStruct {}

impl de::Error for NotAStruct {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Self(None)
    }
}

impl<'de> Deserializer<'de> for FieldNames {
    type Error = NotAStruct;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, NotAStruct> {
        Err(NotAStruct(None))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, NotAStruct> {
        Err(NotAStruct(Some(fields)))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// A bundle's own option keys, as [`BuiltinBundle::options`](super::BuiltinBundle::options)
/// holds them: [`option_keys`] of its options struct, read when asked. Derefs to the slice
/// (`bundle.options.contains(&"base_path")`).
#[derive(Clone, Copy)]
pub struct OptionKeys(fn() -> &'static [&'static str]);

impl OptionKeys {
    /// The keys of `T`.
    pub const fn of<T: DeserializeOwned>() -> Self {
        Self(option_keys::<T>)
    }
}

/// `Deref` so that the keys read like the `&[&str]` this field used to be.
impl Deref for OptionKeys {
    type Target = [&'static str];

    fn deref(&self) -> &Self::Target {
        (self.0)()
    }
}

impl fmt::Debug for OptionKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// For `#[serde(deserialize_with = "harnessx_core::catalog::positive")]` on an integer
/// option that must be at least 1 (a limit): anything else fails with "must be a positive
/// integer".
///
/// ```
/// # use serde::Deserialize;
/// #[derive(Debug, Deserialize)]
/// struct Limits {
///     #[serde(deserialize_with = "harnessx_core::catalog::positive")]
///     max_entries: usize,
/// }
/// let ok: Limits = serde_json::from_value(serde_json::json!({"max_entries": 10})).unwrap();
/// assert_eq!(ok.max_entries, 10);
/// let err = serde_json::from_value::<Limits>(serde_json::json!({"max_entries": 0})).unwrap_err();
/// assert!(err.to_string().contains("expected a positive integer"), "{err}");
/// ```
pub fn positive<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    struct Positive<T>(PhantomData<T>);

    impl<T: TryFrom<u64>> Visitor<'_> for Positive<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a positive integer")
        }

        fn visit_u64<E: de::Error>(self, n: u64) -> Result<T, E> {
            match n {
                0 => Err(E::invalid_value(Unexpected::Unsigned(n), &self)),
                n => T::try_from(n).map_err(|_| E::invalid_value(Unexpected::Unsigned(n), &self)),
            }
        }

        fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
            match u64::try_from(n) {
                Ok(n) => self.visit_u64(n),
                Err(_) => Err(E::invalid_value(Unexpected::Signed(n), &self)),
            }
        }
    }

    deserializer.deserialize_u64(Positive(PhantomData))
}

/// Options for [`ToolRegistry::load_builtin`] in dynamic form: a JSON (or TOML-like) map
/// with the same keys as the bundle helper's options struct. A `null` value means the
/// option is not set.
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

    /// The options as a map, without the keys set to `null`.
    pub(super) fn into_map(self) -> Result<Map<String, Value>, RegistryError> {
        match self.value {
            Value::Object(mut map) => {
                map.retain(|_, v| !v.is_null());
                Ok(map)
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_must_be_a_map_and_null_means_unset() {
        assert!(BuiltinOptions::from(serde_json::json!([1])).into_map().is_err());
        assert!(BuiltinOptions::from(Value::Null).into_map().unwrap().is_empty());
        let map = BuiltinOptions::new().set("a", Value::Null).set("b", 1).into_map().unwrap();
        assert_eq!(map.keys().collect::<Vec<_>>(), ["b"]);
    }

    #[test]
    fn option_keys_are_empty_for_what_is_not_a_plain_struct() {
        #[derive(Deserialize)]
        struct Flat {
            _a: u8,
            #[serde(flatten)]
            _rest: Map<String, Value>,
        }
        assert!(option_keys::<Flat>().is_empty());
        assert!(option_keys::<Map<String, Value>>().is_empty());
        assert!(option_keys::<u32>().is_empty());
    }
}

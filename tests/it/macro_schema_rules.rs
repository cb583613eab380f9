//! The schema `#[tool]` writes as JSON text at compile time equals the one the runtime
//! builders (`harnessx::schema::build`) compose for the same parameters, for every type
//! the macro recognises by spelling (`harnessx-macros/src/ty.rs`): each integer width,
//! both floats, `bool`, `char`, `String`, `Option` (nested too), `Vec`/`VecDeque` nested,
//! `HashMap`/`BTreeMap`/`IndexMap<String, T>`, with `one_of`, defaults and descriptions.
//!
//! Each case is a pair of tools with the same parameters; the second has one more, last,
//! whose type the macro does not recognise (`Opaque`, known only through `schemars`), which
//! sends that whole tool down the run-time path (`StaticSchema::Build`). Its schema without
//! that parameter must be the first tool's compile-time text, byte for byte.

use std::collections::{BTreeMap, HashMap, VecDeque};

use harnessx::__private::{GeneratedTool, StaticSchema, StaticTool};
use harnessx::schema::build::{integer, integer_range, nullable, object, one_of, property, string};
use harnessx::{canonical_schema, tool};
use serde_json::{Value, json};

/// Recognised by its spelling alone, like `indexmap::IndexMap` (whose serde support this
/// crate does not enable).
type IndexMap<K, V> = BTreeMap<K, V>;

/// A type the macro does not recognise: its schema comes from `schemars` at run time.
#[derive(serde::Deserialize, harnessx::schemars::JsonSchema)]
#[schemars(crate = "harnessx::schemars")]
struct Opaque {
    _v: i64,
}

/// `twins!` defines, for each case, the tool `$name` and its twin `$twin` (the same
/// parameters and `z: Opaque`), and lists the pairs in `TWINS`.
macro_rules! twins {
    ($($(#[$meta:meta])* $name:ident $Name:ident, $twin:ident $Twin:ident ($($params:tt)*);)*) => {
        $(
            $(#[$meta])*
            #[tool]
            #[allow(unused_variables, clippy::too_many_arguments, reason = "only the schema is tested")]
            fn $name($($params)*) -> u8 {
                0
            }

            $(#[$meta])*
            #[tool]
            #[allow(unused_variables, clippy::too_many_arguments, reason = "only the schema is tested")]
            fn $twin($($params)* z: Opaque) -> u8 {
                0
            }
        )*

        const TWINS: &[(&StaticTool, &StaticTool)] =
            &[$((<$Name as GeneratedTool>::TOOL, <$Twin as GeneratedTool>::TOOL)),*];
    };
}

twins! {
    signed Signed, signed_rt SignedRt(a: i8, b: i16, c: i32, d: i64, e: i128, f: isize,);
    unsigned Unsigned, unsigned_rt UnsignedRt(a: u8, b: u16, c: u32, d: u64, e: u128, f: usize,);
    scalars Scalars, scalars_rt ScalarsRt(a: f32, b: f64, c: bool, d: char, e: String, f: std::string::String,);
    options Options, options_rt OptionsRt(
        a: Option<i8>,
        b: Option<String>,
        c: Option<char>,
        d: Option<Option<u16>>,
        e: Option<Vec<bool>>,
        f: Option<HashMap<String, f64>>,
        g: core::option::Option<u64>,
    );
    lists Lists, lists_rt ListsRt(
        a: Vec<u8>,
        b: VecDeque<String>,
        c: Vec<Vec<Vec<i32>>>,
        d: Vec<Option<f32>>,
        e: std::vec::Vec<Vec<Option<Vec<char>>>>,
    );
    maps Maps, maps_rt MapsRt(
        a: HashMap<String, i64>,
        b: BTreeMap<String, Vec<Option<i32>>>,
        c: IndexMap<String, u64>,
        d: std::collections::HashMap<String, HashMap<String, bool>>,
        e: Vec<BTreeMap<String, Option<String>>>,
    );
    choices Choices, choices_rt ChoicesRt(
        #[arg(one_of = ["small", "large"])] a: String,
        #[arg(one_of = [1, 2, 3])] b: i32,
        #[arg(one_of = ["x", "y"])] c: Option<String>,
        #[arg(one_of = [1.5, -2.0])] d: f64,
        #[arg(one_of = [true])] e: bool,
        #[arg(one_of = [1, 2])] f: Option<Option<u8>>,
    );
    defaults Defaults, defaults_rt DefaultsRt(
        #[arg(default)] a: Vec<String>,
        #[arg(default = 3)] b: u8,
        #[arg(default = "x")] c: String,
        #[arg(default = -2.5)] d: f64,
        #[arg(default = true)] e: bool,
        #[arg(default = 1e3)] f: f32,
        #[arg(default = "large", one_of = ["small", "large"])] g: String,
        #[arg(default)] h: Option<i16>,
        #[arg(default = 10u32)] i: u32,
    );
    /// Describe things.
    ///
    /// Args:
    ///     a: From the `Args:` section.
    ///     b: Overridden by the parameter's own doc.
    described Described, described_rt DescribedRt(
        a: i64,
        /// From the parameter's doc comment.
        b: Option<i64>,
        #[arg(description = "Quoted \"text\", a back\\slash,\ta tab, a new\nline, é and \u{1}.")] c: String,
        /// Doc, then `#[arg]`: the attribute wins.
        #[arg(description = "From the attribute.", default = 7)]
        d: u16,
    );
}

/// The same parameters without the twin's extra `z`.
fn without_z(mut schema: Value) -> Value {
    let props = schema["properties"].as_object_mut().unwrap();
    assert!(props.shift_remove("z").is_some(), "the twin has `z`");
    let required = schema["required"].as_array_mut().unwrap();
    assert_eq!(required.pop(), Some(json!("z")), "`z` is required and last");
    if required.is_empty() {
        schema.as_object_mut().unwrap().shift_remove("required");
    }
    schema
}

#[test]
fn compile_time_schemas_equal_the_runtime_builders_for_every_recognised_type() {
    assert_eq!(TWINS.len(), 9);
    for (compiled, built) in TWINS {
        let StaticSchema::Json(text) = compiled.schema else {
            panic!(
                "{}: every parameter type is recognised, so the schema is compile-time text",
                compiled.name
            )
        };
        let StaticSchema::Build(build) = built.schema else {
            panic!("{}: `Opaque` is not recognised, so the schema is built at run time", built.name)
        };
        let at_run_time = without_z(build()).to_string();
        assert_eq!(text, at_run_time, "{} (compile time) vs {} (run time)", compiled.name, built.name);
        // Both are canonical.
        let parsed: Value = serde_json::from_str(text).unwrap();
        assert_eq!(canonical_schema(&parsed).to_string(), text, "{}", compiled.name);
    }
}

#[test]
fn the_rules_in_a_few_cases() {
    // An independent check of what both paths give, through the public builders.
    let options = TWINS.iter().find(|(c, _)| c.name == "options").unwrap().0;
    let StaticSchema::Json(text) = options.schema else { unreachable!() };
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(v["properties"]["a"], nullable(integer_range(-128, 127)));
    // `Option<Option<T>>` is one nullable type, not a nest of `anyOf`s.
    assert_eq!(v["properties"]["d"], json!({"type": ["integer", "null"], "minimum": 0, "maximum": 65535}));

    let choices = TWINS.iter().find(|(c, _)| c.name == "choices").unwrap().0;
    let StaticSchema::Json(text) = choices.schema else { unreachable!() };
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(v["properties"]["c"], one_of(nullable(string()), vec![json!("x"), json!("y")]));
    assert_eq!(v["properties"]["c"]["enum"], json!(["x", "y", null]));

    let described = TWINS.iter().find(|(c, _)| c.name == "described").unwrap().0;
    let StaticSchema::Json(text) = described.schema else { unreachable!() };
    let v: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        v,
        object(
            vec![
                ("a", property(integer(), Some("From the `Args:` section."), None)),
                ("b", property(nullable(integer()), Some("From the parameter's doc comment."), None)),
                (
                    "c",
                    property(
                        string(),
                        Some("Quoted \"text\", a back\\slash,\ta tab, a new\nline, é and \u{1}."),
                        None
                    )
                ),
                ("d", property(integer_range(0, 65535), Some("From the attribute."), Some(json!(7)))),
            ],
            &["a", "b", "c"],
        )
    );
}

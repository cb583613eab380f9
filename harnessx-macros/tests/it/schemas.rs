//! Golden schemas: one JSON file per example tool in `tests/golden/`, compared byte for
//! byte (key order included), and sample arguments validated against each with
//! `jsonschema`. Every tool here goes through `crate = hx`, a renamed dependency on the
//! runtime, which is how `harnessx-builtin` uses the macro.
//!
//! After an intended change, regenerate with `UPDATE_GOLDEN=1 cargo test -p harnessx-macros --test schemas`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use harnessx_macros::{tool, toolbox};
use hx::schemars::JsonSchema;
use hx::{IntoToolDefinition, ToolDefinition, ToolRegistry};
use serde::Deserialize;
use serde_json::{Value, json};

/// Multiply two numbers.
///
/// Args:
///     a: First number.
///     b: Second number.
#[tool(crate = hx, permission = "allow", replay_policy = "safe")]
fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

/// A temperature scale.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "hx::schemars")]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// A point on the map.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "hx::schemars")]
struct Location {
    /// Degrees north.
    lat: f64,
    /// Degrees east.
    lon: f64,
    /// A label shown to people.
    title: Option<String>,
}

/// Forecast for a place.
///
/// Args:
///     place: Where.
///     unit: Which scale.
///     hours: Hours ahead, one list per day.
#[tool(crate = "hx")]
async fn forecast(
    place: Location,
    #[arg(default = Unit::Celsius)] unit: Unit,
    hours: Vec<Vec<u8>>,
) -> String {
    let title = place.title.unwrap_or_default();
    format!("{title}{:.1},{:.1} {:?} {}", place.lat, place.lon, unit, hours.len())
}

/// Tag documents.
#[tool(crate = hx)]
fn tag(
    /// Tags per document id.
    tags: HashMap<String, Vec<String>>,
    /// Scores, sorted by key.
    scores: BTreeMap<String, Option<f32>>,
    #[arg(one_of = [1, 2, 3], description = "Priority.")] priority: i32,
    flag: bool,
    letter: char,
    raw: Value,
) -> usize {
    let _ = (&scores, priority, flag, letter, raw);
    tags.len()
}

struct Notes {
    prefix: String,
}

#[toolbox(crate = hx)]
impl Notes {
    /// Add a note.
    ///
    /// Args:
    ///     text: The note.
    #[tool(name = "add_note", replay_policy = "idempotent")]
    fn add(&self, text: String) -> String {
        format!("{}{text}", self.prefix)
    }
}

fn notes() -> Vec<ToolDefinition> {
    let registry = ToolRegistry::new();
    registry.register_toolbox(Arc::new(Notes { prefix: "> ".into() })).unwrap();
    registry.list_tools()
}

fn tools() -> Vec<ToolDefinition> {
    let mut all =
        vec![Calculate.into_tool_definition(), Forecast.into_tool_definition(), Tag.into_tool_definition()];
    all.extend(notes());
    all
}

/// What a golden file holds: the parts of a definition the model sees, plus the policy.
fn golden_json(def: &ToolDefinition) -> String {
    let v = json!({
        "name": def.name,
        "description": def.description,
        "input_schema": def.input_schema,
        "permission": def.permission,
        "replay_policy": def.replay_policy,
        "concurrent": def.concurrent,
    });
    serde_json::to_string_pretty(&v).unwrap() + "\n"
}

#[test]
fn schemas_match_golden_files() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    for def in tools() {
        let path = dir.join(format!("{}.json", def.name));
        let actual = golden_json(&def);
        if update {
            std::fs::write(&path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1 to create it)", path.display()));
        assert_eq!(actual, expected, "schema of {} changed; see {}", def.name, path.display());
    }
}

#[test]
fn schemas_are_canonical() {
    fn walk(v: &Value, path: &str) {
        if let Value::Object(map) = v {
            for key in ["$ref", "$defs", "$schema", "definitions"] {
                assert!(!map.contains_key(key), "{key} at {path}");
            }
            for (k, sub) in map {
                // `title` is only forbidden as a keyword, not as a property name.
                if k == "title" && !path.ends_with("/properties") {
                    panic!("title at {path}");
                }
                walk(sub, &format!("{path}/{k}"));
            }
        } else if let Value::Array(items) = v {
            items.iter().enumerate().for_each(|(i, s)| walk(s, &format!("{path}/{i}")));
        }
    }
    for def in tools() {
        walk(&def.input_schema, &def.name);
        assert_eq!(hx::canonical_schema(&def.input_schema), def.input_schema, "{}", def.name);
    }
}

fn validator(name: &str) -> jsonschema::Validator {
    let def = tools().into_iter().find(|d| d.name == name).unwrap();
    jsonschema::validator_for(&def.input_schema).unwrap()
}

#[test]
fn sample_arguments_validate() {
    let cases: [(&str, Value, bool); 14] = [
        ("calculate", json!({"a": 6, "b": 7}), true),
        ("calculate", json!({"a": 6}), false),
        ("calculate", json!({"a": 6, "b": 1.5}), false),
        ("forecast", json!({"place": {"lat": 1.0, "lon": 2.0, "title": null}, "hours": [[0, 23], []]}), true),
        (
            "forecast",
            json!({"place": {"lat": 1.0, "lon": 2.0, "title": "x"}, "unit": "fahrenheit", "hours": []}),
            true,
        ),
        (
            "forecast",
            json!({"place": {"lat": 1.0, "lon": 2.0, "title": null}, "unit": "kelvin", "hours": []}),
            false,
        ),
        ("forecast", json!({"place": {"lat": 1.0, "lon": 2.0, "title": null}, "hours": [[256]]}), false),
        ("forecast", json!({"place": {"lat": "north", "lon": 2.0}, "hours": []}), false),
        (
            "tag",
            json!({"tags": {"d1": ["a"]}, "scores": {"x": null, "y": 0.5}, "priority": 2, "flag": true, "letter": "q", "raw": [1]}),
            true,
        ),
        (
            "tag",
            json!({"tags": {"d1": ["a"]}, "scores": {}, "priority": 4, "flag": true, "letter": "q", "raw": null}),
            false,
        ),
        (
            "tag",
            json!({"tags": {"d1": [1]}, "scores": {}, "priority": 1, "flag": true, "letter": "q", "raw": null}),
            false,
        ),
        (
            "tag",
            json!({"tags": {}, "scores": {}, "priority": 1, "flag": true, "letter": "qq", "raw": null}),
            false,
        ),
        ("add_note", json!({"text": "hi"}), true),
        ("add_note", json!({"text": ["hi"]}), false),
    ];
    for (tool, args, valid) in cases {
        assert_eq!(validator(tool).is_valid(&args), valid, "{tool} {args}");
    }
}

#[tokio::test]
async fn toolbox_methods_run_against_the_shared_instance() {
    let registry = ToolRegistry::new();
    let names = registry.register_toolbox(Arc::new(Notes { prefix: "note: ".into() })).unwrap();
    assert_eq!(names, ["add_note"]);
    let r = registry.execute(&hx::ToolCall::new("c", "add_note", r#"{"text":"milk"}"#), None).await;
    assert_eq!(r.content, "note: milk");
    let r = registry
        .execute(
            &hx::ToolCall::new("c", "forecast", r#"{"place":{"lat":1,"lon":2,"title":null},"hours":[[1]]}"#),
            None,
        )
        .await;
    assert!(r.is_error, "forecast was not registered here: {}", r.content);
    registry.register_tool(Forecast).unwrap();
    let r = registry
        .execute(
            &hx::ToolCall::new("c", "forecast", r#"{"place":{"lat":1,"lon":2,"title":null},"hours":[[1]]}"#),
            None,
        )
        .await;
    assert_eq!(r.content, "1.0,2.0 Celsius 1");
}

//! `#[tool]` on free functions: the spec's `calculate` example, descriptions, schemas,
//! policies, annotations, return values and errors, executed through the registry.

use std::collections::HashMap;

use harnessx::{
    PermissionLevel, ReplayPolicy, ToolAnnotations, ToolCall, ToolContext, ToolError, ToolOptions,
    ToolRegistry, ToolRetry, TransientToolError, tool, toolbox,
};
use serde_json::json;

/// Multiply two numbers.
///
/// Args:
///     a: First number.
///     b: Second number.
#[tool(permission = "allow", replay_policy = "safe")]
fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

#[test]
fn spec_calculate_example_yields_the_described_definition() {
    let registry = ToolRegistry::new();
    let def = registry.register_tool(Calculate).unwrap();
    assert_eq!(def.name, "calculate");
    assert_eq!(Calculate::NAME, "calculate");
    assert_eq!(def.description, "Multiply two numbers.");
    assert_eq!(
        def.input_schema,
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "First number."},
                "b": {"type": "integer", "description": "Second number."}
            },
            "required": ["a", "b"]
        })
    );
    assert_eq!(def.permission, Some(PermissionLevel::Allow));
    assert_eq!(def.replay_policy, ReplayPolicy::Safe);
    assert_eq!(def.replay_policy.to_string(), "safe");
    assert!(def.concurrent);
    assert_eq!(def.timeout_seconds, None);
    assert!(def.handler.is_blocking());
    // The function itself is still an ordinary function.
    assert_eq!(calculate(6, 7), 42);
}

#[tokio::test]
async fn calculate_runs_through_the_pipeline() {
    let registry = ToolRegistry::new();
    registry.register_tool(Calculate).unwrap();
    let ok = registry.execute(&ToolCall::new("c1", "calculate", r#"{"a": 6, "b": 7}"#), None).await;
    assert!(!ok.is_error, "{}", ok.content);
    assert_eq!(ok.content, "42");
    let bad = registry.execute(&ToolCall::new("c2", "calculate", r#"{"a": 6}"#), None).await;
    assert!(bad.is_error);
    assert!(bad.content.contains("\"b\" is a required property"), "{}", bad.content);
}

/// Look up the weather
/// for a city.
///
/// # Arguments
///
/// * `city` - The city name.
/// * `days` - How many days,
///   counting today.
///
/// # Errors
///
/// When the city is unknown.
#[tool(name = "get-weather", concurrent = false, timeout_seconds = 120, retry(max_attempts = 5))]
async fn weather(
    city: String,
    #[arg(default = 1)] days: u32,
    /// Temperature unit.
    #[arg(default = "celsius", one_of = ["celsius", "fahrenheit"])]
    unit: String,
    ctx: &ToolContext,
) -> Result<String, String> {
    if city == "Atlantis" {
        return Err(format!("unknown city {city}"));
    }
    Ok(format!("{city}: sunny for {days} day(s) in {unit} (call {})", ctx.call_id()))
}

#[tokio::test]
async fn async_tool_with_rustdoc_sections_defaults_and_context() {
    let registry = ToolRegistry::new();
    let def = registry.register_tool(Weather).unwrap();
    assert_eq!(def.name, "get-weather");
    assert_eq!(def.description, "Look up the weather\nfor a city.");
    assert!(!def.handler.is_blocking());
    assert!(!def.concurrent);
    assert_eq!(def.timeout_seconds, Some(120.0));
    assert_eq!(def.retry, Some(ToolRetry { max_attempts: 5, ..ToolRetry::default() }));
    assert_eq!(def.permission, None, "an omitted permission inherits the manager's default");
    assert_eq!(def.replay_policy, ReplayPolicy::Manual);
    assert_eq!(
        def.input_schema,
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city name."},
                "days": {"type": "integer", "minimum": 0, "maximum": 4294967295u64,
                         "description": "How many days, counting today.", "default": 1},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                         "description": "Temperature unit.", "default": "celsius"}
            },
            "required": ["city"]
        })
    );
    let r = registry.execute(&ToolCall::new("id-7", "get-weather", r#"{"city": "Oslo"}"#), None).await;
    assert_eq!(r.content, "Oslo: sunny for 1 day(s) in celsius (call id-7)");
    assert!(!r.is_error);
    let r = registry.execute(&ToolCall::new("id-8", "get-weather", r#"{"city": "Atlantis"}"#), None).await;
    assert!(r.is_error);
    assert_eq!(r.content, "unknown city Atlantis");
    let r = registry
        .execute(&ToolCall::new("id-9", "get-weather", r#"{"city": "Oslo", "unit": "kelvin"}"#), None)
        .await;
    assert!(r.is_error, "one_of is enforced by the schema");
}

/// Count words per line.
#[tool]
fn count(lines: Vec<String>, #[arg(default)] min: Option<usize>) -> HashMap<String, usize> {
    lines
        .into_iter()
        .filter(|l| l.split_whitespace().count() >= min.unwrap_or(0))
        .map(|l| {
            let n = l.split_whitespace().count();
            (l, n)
        })
        .collect()
}

#[tokio::test]
async fn serializable_returns_are_json_and_optional_defaults_are_not_required() {
    let registry = ToolRegistry::new();
    let def = registry.register_tool(Count).unwrap();
    assert_eq!(def.input_schema["required"], json!(["lines"]));
    assert_eq!(def.input_schema["properties"]["min"], json!({"type": ["integer", "null"], "minimum": 0}));
    let r = registry.execute(&ToolCall::new("c", "count", r#"{"lines": ["a b"]}"#), None).await;
    assert_eq!(r.content, r#"{"a b":2}"#);
    assert_eq!(r.structured_content, Some(json!({"a b": 2})));
}

/// Nullable but required (no default).
#[tool]
fn nullable(note: Option<String>) -> String {
    note.unwrap_or_else(|| "none".into())
}

#[tokio::test]
async fn nullable_parameters_stay_required_without_a_default() {
    let registry = ToolRegistry::new();
    let def = registry.register_tool(Nullable).unwrap();
    assert_eq!(def.input_schema["required"], json!(["note"]));
    let r = registry.execute(&ToolCall::new("c", "nullable", r#"{"note": null}"#), None).await;
    assert_eq!(r.content, "none");
    let r = registry.execute(&ToolCall::new("c", "nullable", r#"{}"#), None).await;
    assert!(r.is_error);
}

static ATTEMPTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Flaky read.
#[tool(replay_policy = "idempotent", retry(max_attempts = 3, initial_delay_seconds = 0.001))]
fn flaky() -> Result<&'static str, TransientToolError> {
    if ATTEMPTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
        Err(TransientToolError::new("busy, try again"))
    } else {
        Ok("done")
    }
}

#[tokio::test]
async fn transient_errors_are_retried() {
    let registry = ToolRegistry::new();
    registry.register_tool(Flaky).unwrap();
    let r = registry.execute(&ToolCall::new("c", "flaky", "{}"), None).await;
    assert_eq!(r.content, "done");
    assert_eq!(ATTEMPTS.load(std::sync::atomic::Ordering::SeqCst), 3);
}

/// Always fails with an I/O error.
#[tool]
fn broken() -> std::io::Result<String> {
    Err(std::io::Error::other("disk on fire"))
}

/// Fails with an explicit permanent error.
#[tool]
async fn refuses(ctx: ToolContext) -> Result<(), ToolError> {
    Err(ToolError::new(format!("{} refused", ctx.tool_name())))
}

#[tokio::test]
async fn error_text_goes_to_the_model() {
    let registry = ToolRegistry::new();
    registry.register_tool(Broken).unwrap();
    registry.register_tool(Refuses).unwrap();
    let r = registry.execute(&ToolCall::new("c", "broken", "{}"), None).await;
    assert!(r.is_error);
    assert_eq!(r.content, "disk on fire");
    let r = registry.execute(&ToolCall::new("c", "refuses", ""), None).await;
    assert_eq!(r.content, "refuses refused");
    // A zero-parameter tool still has an object schema.
    assert_eq!(
        registry.get_tool("broken").unwrap().input_schema,
        json!({"type": "object", "properties": {}})
    );
}

#[test]
fn definitions_are_deterministic_and_share_one_schema() {
    let a = harnessx::IntoToolDefinition::into_tool_definition(Weather);
    let b = harnessx::IntoToolDefinition::into_tool_definition(Weather);
    assert_eq!(a.input_schema.to_string(), b.input_schema.to_string());
}

/// Pick a size, or none.
#[tool]
fn pick(#[arg(one_of = ["small", "large"])] size: Option<String>) -> String {
    size.unwrap_or_else(|| "none".into())
}

/// A shape with an optional fill, given as a user type (so the schema is built at run time).
#[derive(serde::Deserialize, harnessx::schemars::JsonSchema)]
#[schemars(crate = "harnessx::schemars")]
struct Shape {
    sides: u8,
}

/// Pick a fill for a shape, or none.
#[tool]
fn fill(shape: Shape, #[arg(one_of = ["red", "blue"])] color: Option<String>) -> String {
    format!("{} {}", shape.sides, color.unwrap_or_else(|| "none".into()))
}

#[tokio::test]
async fn one_of_on_an_option_still_admits_null() {
    let registry = ToolRegistry::new();
    registry.register_tool(Pick).unwrap();
    registry.register_tool(Fill).unwrap();
    // The compile-time schema and the one built at run time agree.
    assert_eq!(
        registry.get_tool("pick").unwrap().input_schema["properties"]["size"],
        json!({"type": ["string", "null"], "enum": ["small", "large", null]})
    );
    assert_eq!(
        registry.get_tool("fill").unwrap().input_schema["properties"]["color"],
        json!({"type": ["string", "null"], "enum": ["red", "blue", null]})
    );
    for (name, args, expected, is_error) in [
        ("pick", r#"{"size": null}"#, "none", false),
        ("pick", r#"{"size": "large"}"#, "large", false),
        ("fill", r#"{"shape": {"sides": 3}, "color": null}"#, "3 none", false),
        ("fill", r#"{"shape": {"sides": 4}, "color": "red"}"#, "4 red", false),
    ] {
        let r = registry.execute(&ToolCall::new("c", name, args), None).await;
        assert_eq!((r.content.as_str(), r.is_error), (expected, is_error), "{name} {args}");
    }
    let r = registry.execute(&ToolCall::new("c", "pick", r#"{"size": "medium"}"#), None).await;
    assert!(r.is_error);
    assert!(r.content.starts_with("invalid arguments for pick: size: "), "{}", r.content);
}

/// Look a word up.
#[tool(read_only)]
fn lookup(word: String) -> String {
    word
}

/// Replace a stored value.
#[tool(read_only = false, destructive = true, idempotent, open_world = false)]
fn store(value: String) -> String {
    value
}

#[test]
fn annotation_flags_land_in_the_definition() {
    let registry = ToolRegistry::new();
    let lookup = registry.register_tool(Lookup).unwrap();
    assert_eq!(lookup.annotations, ToolAnnotations::new().read_only(true));
    assert!(!lookup.annotations.may_modify());
    let store = registry.register_tool(Store).unwrap();
    assert_eq!(
        store.annotations,
        ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(false)
    );
    assert!(store.annotations.may_modify());
    // A tool without hints has none, and so may change things.
    let calculate = registry.register_tool(Calculate).unwrap();
    assert!(calculate.annotations.is_empty());
    assert!(calculate.annotations.may_modify());
    // Registration options override only the hints they set.
    let lookup =
        registry.register_tool_with(Lookup, ToolOptions::new().open_world(true).replace(true)).unwrap();
    assert_eq!(lookup.annotations, ToolAnnotations::new().read_only(true).open_world(true));
}

/// A shelf of words.
struct Shelf;

#[toolbox]
impl Shelf {
    /// Count the words on the shelf.
    #[tool(read_only, idempotent)]
    fn shelf_size(&self) -> usize {
        0
    }
}

#[test]
fn toolbox_methods_take_annotation_flags() {
    let registry = ToolRegistry::new();
    registry.register_toolbox(std::sync::Arc::new(Shelf)).unwrap();
    let def = registry.get_tool("shelf_size").unwrap();
    assert_eq!(def.annotations, ToolAnnotations::new().read_only(true).idempotent(true));
}

/// Add two numbers.
///
/// Args:
///     a: First number.
///     b: Second number.
///
/// Examples:
///     ```text
///     Args:
///         a: 1
///         c: 2
///     ```
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

// An `Args:` block inside a fenced example used to redefine `a` (as "1") and fail the build
// on `c`, which is not a parameter.
#[test]
fn args_inside_a_fenced_example_are_not_parameter_docs() {
    let def = harnessx::IntoToolDefinition::into_tool_definition(Add);
    assert_eq!(def.description, "Add two numbers.");
    assert_eq!(def.input_schema["properties"]["a"]["description"], "First number.");
    assert_eq!(def.input_schema["properties"]["b"]["description"], "Second number.");
}

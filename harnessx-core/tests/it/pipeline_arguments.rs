//! Spec tools.md "Tool names the model gets wrong", its argument half: arguments that are
//! not a JSON object, garbled or cut off get an error result with the parse error and the
//! tool does not run; empty and `null` arguments count as `{}`; arguments that do not
//! match the schema get a one-line error naming the field. Validation is checked against
//! the JSON-Schema-Test-Suite (draft 2020-12).

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use harnessx_core::{MAX_JSON_DEPTH, RegistryError, ToolCall, ToolHandler, ToolOptions, ToolRegistry};
use harnessx_test_support::deep::{Shape, nested_json};
use serde_json::{Value, json};

fn calculator() -> (ToolRegistry, Counter) {
    let registry = ToolRegistry::new();
    let counter = Counter::new();
    registry
        .register_with_schema(
            "calculate",
            "Multiply two numbers.",
            calc_schema(),
            calculate_handler(&counter),
            ToolOptions::new(),
        )
        .unwrap();
    (registry, counter)
}

/// The error serde_json reports for `raw`, as the model should see it.
fn parse_error(raw: &str) -> String {
    serde_json::from_str::<Value>(raw).expect_err("the text must not parse").to_string()
}

#[tokio::test]
async fn valid_arguments_run_the_tool() {
    let (registry, counter) = calculator();
    let result = registry.execute(&call("c1", "calculate", r#"{"a": 6, "b": 7}"#), None).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.content, "42");
    assert_eq!(counter.get(), 1);
}

#[tokio::test]
async fn arguments_that_are_not_a_json_object_are_refused_and_the_tool_does_not_run() {
    let (registry, counter) = calculator();
    for raw in ["[6, 7]", "42", "true", r#""{\"a\": 6, \"b\": 7}""#] {
        let result = registry.execute(&call("c1", "calculate", raw), None).await;
        assert!(result.is_error, "{raw}: {result:?}");
        assert!(result.content.starts_with("invalid arguments for calculate"), "{raw}: {}", result.content);
        assert!(result.content.contains("JSON object"), "{raw}: {}", result.content);
    }
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn garbled_arguments_get_the_parse_error_and_the_tool_does_not_run() {
    let (registry, counter) = calculator();
    for raw in
        [r#"{"a": 6,, "b": 7}"#, r#"{a: 6, b: 7}"#, r#"{"a": 6 "b": 7}"#, r#"{"a": 6, "b": 7}}"#, "{'a': 6}"]
    {
        let result = registry.execute(&call("c1", "calculate", raw), None).await;
        assert!(result.is_error, "{raw}: {result:?}");
        let expected = parse_error(raw);
        assert!(
            result.content.contains(&expected),
            "{raw}: {:?} does not contain {expected:?}",
            result.content
        );
        assert!(!result.content.contains('\n'));
    }
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn the_parse_error_position_refers_to_the_arguments_as_sent() {
    let (registry, counter) = calculator();
    let raw = "\n\n  {\"a\": 6,, \"b\": 7}";
    let cut = "{\"a\": 6, ";
    let result = registry.execute(&call("c1", "calculate", raw), None).await;
    let expected = parse_error(raw);
    assert!(expected.contains("line 3"), "{expected}");
    assert!(result.content.contains(&expected), "{:?} does not contain {expected:?}", result.content);
    // Trailing whitespace of a cut-off call moves the reported column too.
    let result = registry.execute(&call("c2", "calculate", cut), None).await;
    let expected = parse_error(cut);
    assert!(result.content.contains(&expected), "{:?} does not contain {expected:?}", result.content);
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn a_field_name_with_a_line_break_still_gives_one_line() {
    // From the JSON-Schema-Test-Suite, properties.json "properties with escaped characters".
    let registry = ToolRegistry::new();
    let counter = register_writer(
        &registry,
        "t",
        json!({"type": "object", "properties": {"foo\nbar": {"type": "number"}}}),
    );
    let result = registry.execute(&ToolCall::from_value("c", "t", &json!({"foo\nbar": "1"})), None).await;
    assert!(result.is_error);
    assert_eq!(counter.get(), 0);
    assert!(!result.content.contains('\n'), "{:?}", result.content);
}

fn register_writer(registry: &ToolRegistry, name: &str, schema: Value) -> Counter {
    let counter = Counter::new();
    registry.register_with_schema(name, "Write a file.", schema, echo(&counter), ToolOptions::new()).unwrap();
    counter
}

#[tokio::test]
async fn arguments_cut_off_mid_line_get_the_parse_error_and_the_tool_does_not_run() {
    let registry = ToolRegistry::new();
    let counter = register_writer(
        &registry,
        "write_file",
        json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}),
    );
    let full = r#"{"path": "notes.txt", "content": "line one\nline two\n"}"#;
    for cut in [
        r#"{"path": "notes.txt", "content": "line one\nline tw"#,
        r#"{"path": "notes.txt", "content": "line one\n"#,
        r#"{"path": "notes.txt","#,
        "{",
    ] {
        let result = registry.execute(&call("c1", "write_file", cut), None).await;
        assert!(result.is_error, "{cut}: {result:?}");
        let expected = parse_error(cut);
        assert!(
            result.content.contains(&expected),
            "{cut}: {:?} does not contain {expected:?}",
            result.content
        );
    }
    assert_eq!(counter.get(), 0, "the tool never runs on a partial call");

    // The model sends the call again with the full JSON, and it runs.
    let result = registry.execute(&call("c2", "write_file", full), None).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(counter.get(), 1);
}

#[tokio::test]
async fn a_recorded_anthropic_stream_cut_off_at_max_tokens_does_not_run_the_tool() {
    // The tool input of this real stream stops mid-string when max_tokens is reached.
    let sse = fixture("transcripts/anthropic/messages_stream_tool_use_cut_off_max_tokens.sse");
    let (mut id, mut name, mut input) = (String::new(), String::new(), String::new());
    for line in sse.lines() {
        let Some(data) = line.strip_prefix("data: ") else { continue };
        let event: Value = serde_json::from_str(data).unwrap();
        if event["content_block"]["type"] == "tool_use" {
            id = event["content_block"]["id"].as_str().unwrap().to_owned();
            name = event["content_block"]["name"].as_str().unwrap().to_owned();
        }
        if event["delta"]["type"] == "input_json_delta" {
            input.push_str(event["delta"]["partial_json"].as_str().unwrap());
        }
    }
    assert_eq!(name, "make_file");
    assert!(input.ends_with("\"Filing taxes"), "{input}");

    let registry = ToolRegistry::new();
    let counter = register_writer(
        &registry,
        "make_file",
        json!({"type": "object", "properties": {"filename": {"type": "string"}, "lines_of_text": {"type": "array", "items": {"type": "string"}}}, "required": ["filename", "lines_of_text"]}),
    );
    let result = registry.execute(&ToolCall::new(&id, &name, &input), None).await;
    assert!(result.is_error);
    assert_eq!(result.call_id, id);
    assert!(result.content.contains(&parse_error(&input)), "{}", result.content);
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn empty_and_null_arguments_count_as_an_empty_object() {
    // Validation then names the missing field.
    let (registry, counter) = calculator();
    for raw in ["", "   ", "null", " null\n"] {
        let result = registry.execute(&call("c1", "calculate", raw), None).await;
        assert!(result.is_error, "{raw:?}: {result:?}");
        assert!(
            result.content.starts_with("invalid arguments for calculate: "),
            "{raw:?}: {}",
            result.content
        );
        assert!(result.content.contains("\"a\""), "names the missing field: {}", result.content);
        assert!(!result.content.contains('\n'));
    }
    assert_eq!(counter.get(), 0);

    // A tool without required fields runs with `{}`.
    let registry = ToolRegistry::new();
    let counter = register_writer(&registry, "now", empty_schema());
    for raw in ["", "null"] {
        let result = registry.execute(&call("c1", "now", raw), None).await;
        assert_eq!(result.content, "{}", "{raw:?}");
    }
    assert_eq!(counter.get(), 2);
}

#[tokio::test]
async fn a_schema_mismatch_gets_one_line_naming_the_field() {
    let (registry, counter) = calculator();
    let result = registry.execute(&call("c1", "calculate", r#"{"a": 1, "b": "x"}"#), None).await;
    assert!(result.is_error);
    assert_eq!(result.content, r#"invalid arguments for calculate: b: "x" is not of type "integer""#);
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn other_mismatches_name_their_field_on_one_line() {
    let registry = ToolRegistry::new();
    let counter = register_writer(
        &registry,
        "create_user",
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 5},
                "role": {"enum": ["admin", "user"]},
                "tags": {"type": "array", "items": {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}}
            },
            "required": ["name"],
            "additionalProperties": false
        }),
    );
    let cases = [
        (r#"{}"#, "name"),
        (r#"{"name": "much too long"}"#, "name"),
        (r#"{"name": "ann", "role": "root"}"#, "role"),
        (r#"{"name": "ann", "tags": [{"label": "a"}, {"label": 3}]}"#, "label"),
        (r#"{"name": "ann", "colour": "red"}"#, "colour"),
    ];
    for (raw, field) in cases {
        let result = registry.execute(&call("c1", "create_user", raw), None).await;
        assert!(result.is_error, "{raw}");
        assert!(
            result.content.starts_with("invalid arguments for create_user: "),
            "{raw}: {}",
            result.content
        );
        assert!(result.content.contains(field), "{raw}: {} does not name {field}", result.content);
        assert!(!result.content.contains('\n'), "{raw}: {}", result.content);
    }
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn whitespace_around_valid_arguments_is_fine() {
    let (registry, counter) = calculator();
    let result = registry.execute(&call("c1", "calculate", "  \n{\"a\": 2,\n   \"b\": 3}  \n"), None).await;
    assert_eq!(result.content, "6");
    assert_eq!(counter.get(), 1);
}

/// Runs one JSON-Schema-Test-Suite case through `register_with_schema` and `execute`.
/// Valid arguments reach the handler unchanged; invalid ones get one line naming `field`.
async fn run_suite_case(
    registry: &ToolRegistry,
    counter: &Counter,
    tool: &str,
    arguments: &Value,
    valid: bool,
    field: Option<&str>,
    what: &str,
) {
    let before = counter.get();
    let result = registry.execute(&ToolCall::from_value("c", tool, arguments), None).await;
    if valid {
        assert!(!result.is_error, "{what}: {result:?}");
        assert_eq!(counter.get(), before + 1, "{what}");
        let received: Value = serde_json::from_str(&result.content).unwrap();
        assert_eq!(&received, arguments, "{what}: the handler gets the arguments as sent");
    } else {
        assert!(result.is_error, "{what}: {result:?}");
        assert_eq!(counter.get(), before, "{what}: the handler ran on invalid arguments");
        let prefix = format!("invalid arguments for {tool}: {}", field.unwrap_or(""));
        assert!(
            result.content.starts_with(&prefix),
            "{what}: {:?} should start with {prefix:?}",
            result.content
        );
        assert!(!result.content.contains('\n'), "{what}: {}", result.content);
    }
}

#[tokio::test]
async fn json_schema_test_suite_draft_2020_12() {
    let files = [
        "additionalProperties",
        "anyOf",
        "const",
        "enum",
        "items",
        "maxLength",
        "minimum",
        "properties",
        "required",
        "type",
    ];
    let (mut object_cases, mut wrapped_cases, mut refused_schemas) = (0, 0, 0);
    for file in files {
        let groups = fixture_json(&format!("jsonschema_2020_12/{file}.json"));
        for (g, group) in groups.as_array().unwrap().iter().enumerate() {
            let schema = &group["schema"];
            let Some(obj) = schema.as_object() else { continue }; // boolean schemas
            let label = format!("{file}[{g}] {}", group["description"]);
            let tests = group["tests"].as_array().unwrap();

            // 1. Object schemas as given: object data validates exactly as the suite says.
            let top_type = obj.get("type");
            let registry = ToolRegistry::new();
            let counter = Counter::new();
            let registered = registry.register_with_schema(
                "t",
                "Suite.",
                schema.clone(),
                echo(&counter),
                ToolOptions::new(),
            );
            match top_type {
                Some(t) if t != "object" => {
                    assert!(
                        matches!(registered, Err(RegistryError::InvalidSchema { .. })),
                        "{label}: {registered:?}"
                    );
                    refused_schemas += 1;
                }
                _ => {
                    registered.unwrap_or_else(|e| panic!("{label}: {e}"));
                    for test in tests {
                        let what = format!("{label} / {}", test["description"]);
                        let data = &test["data"];
                        let valid = test["valid"].as_bool().unwrap();
                        if data.is_object() {
                            run_suite_case(&registry, &counter, "t", data, valid, None, &what).await;
                            object_cases += 1;
                        } else if !data.is_null() {
                            // Tool arguments are always an object: anything else is refused.
                            let before = counter.get();
                            let result = registry.execute(&ToolCall::from_value("c", "t", data), None).await;
                            assert!(
                                result.is_error && result.content.contains("JSON object"),
                                "{what}: {result:?}"
                            );
                            assert_eq!(counter.get(), before);
                        }
                    }
                }
            }

            // 2. Every self-contained schema as the schema of one property, `value`: the
            //    error must then name that field.
            if schema.to_string().contains("$ref") || schema.to_string().contains("$defs") {
                continue;
            }
            let mut inner = obj.clone();
            inner.remove("$schema");
            let wrapper = json!({"type": "object", "properties": {"value": inner}, "required": ["value"]});
            let registry = ToolRegistry::new();
            let counter = Counter::new();
            registry
                .register_with_schema("wrapped", "Suite.", wrapper, echo(&counter), ToolOptions::new())
                .unwrap_or_else(|e| panic!("{label} wrapped: {e}"));
            for test in tests {
                let what = format!("{label} / {} (as property)", test["description"]);
                let valid = test["valid"].as_bool().unwrap();
                let arguments = json!({"value": test["data"]});
                run_suite_case(&registry, &counter, "wrapped", &arguments, valid, Some("value"), &what).await;
                wrapped_cases += 1;
            }
        }
    }
    // Guard against the fixtures silently going missing or being skipped.
    assert!(object_cases >= 70, "{object_cases} object cases");
    assert!(wrapped_cases >= 250, "{wrapped_cases} wrapped cases");
    assert!(refused_schemas >= 10, "{refused_schemas} non-object schemas refused");
}

#[tokio::test]
async fn the_handler_receives_the_validated_arguments() {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "calculate",
            "Multiply.",
            calc_schema(),
            ToolHandler::typed_async(|args: CalcArgs| async move { Ok::<_, String>(args.a * args.b) }),
            ToolOptions::new(),
        )
        .unwrap();
    let result = registry.execute(&call("c1", "calculate", r#"{"b": 4, "a": 5}"#), None).await;
    assert_eq!(result.content, "20");
}

#[derive(serde::Deserialize)]
struct CalcArgs {
    a: i64,
    b: i64,
}

/// Arguments nested deeper than the engine takes: one line saying so, the limit named, and
/// the tool does not run.
fn assert_too_deep(content: &str, tool: &str) {
    let expected = format!(
        "invalid arguments for {tool}: the arguments are nested too deeply (more than {MAX_JSON_DEPTH} levels of arrays and objects); the tool did not run. Send the call again with flatter arguments."
    );
    assert_eq!(content, expected);
}

/// Spec: no untrusted input recurses without bound. Arguments of every shape nested 1 to
/// 1,000,000 levels deep, through a tool that takes any object and one whose schema
/// recurses: up to the limit they run (or get the cut-off error when unclosed); past it
/// they get the one-line depth error (before the fix, 101 to 127 levels ran and deeper
/// text got serde_json's "recursion limit exceeded" with the advice to resend the
/// complete object). Every case ends quickly.
#[tokio::test]
async fn deeply_nested_arguments_of_every_shape_are_refused_past_the_limit() {
    let registry = ToolRegistry::new();
    let any = register_writer(&registry, "store", json!({"type": "object"}));
    let recursive = register_writer(
        &registry,
        "store_tree",
        json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/node"}},
            "$defs": {"node": {"anyOf": [
                {"type": "integer"},
                {"type": "array", "items": {"$ref": "#/$defs/node"}},
                {"type": "object", "properties": {"a": {"$ref": "#/$defs/node"}}, "additionalProperties": false}
            ]}}
        }),
    );
    let depths = harnessx_test_support::deep::DEPTHS.into_iter().chain([MAX_JSON_DEPTH + 1, 127, 128]);
    let mut ran = 0;
    for depth in depths {
        for shape in Shape::ALL {
            let raw = nested_json(shape, depth);
            for tool in ["store", "store_tree"] {
                let started = Instant::now();
                let result = registry.execute(&call("c1", tool, &raw), None).await;
                let took = started.elapsed();
                assert!(took < Duration::from_secs(5), "{tool} {shape:?} {depth}: took {took:?}");
                let case = format!("{tool} {shape:?} at depth {depth}");
                if depth > MAX_JSON_DEPTH {
                    assert!(result.is_error, "{case}");
                    assert_too_deep(&result.content, tool);
                } else if shape == Shape::Unclosed {
                    assert!(result.is_error, "{case}");
                    assert!(result.content.contains("they look cut off"), "{case}: {}", result.content);
                } else {
                    assert!(!result.is_error, "{case}: {}", result.content);
                    let echoed: Value = serde_json::from_str(&result.content).unwrap();
                    assert_eq!(echoed, serde_json::from_str::<Value>(&raw).unwrap(), "{case}");
                    ran += 1;
                }
            }
        }
    }
    // Depths 1, 10 and 100, three closed shapes, two tools.
    assert_eq!(ran, 18);
    assert_eq!(any.get() + recursive.get(), 18);
}

/// Long but flat arguments are not deep: a million-element array, a 16 MiB string and a
/// string of a million brackets all run.
#[tokio::test]
async fn long_flat_arguments_and_brackets_inside_strings_are_not_deep() {
    let registry = ToolRegistry::new();
    let counter = register_writer(&registry, "store", json!({"type": "object"}));
    let wide = format!("{{\"a\": [{}1]}}", "1,".repeat(1_000_000));
    let long = format!("{{\"a\": \"{}\"}}", "x".repeat(16 << 20));
    let brackets = format!("{{\"a\": \"{}{}\\\"\"}}", "[{".repeat(500_000), "\\\\");
    for raw in [&wide, &long, &brackets] {
        let started = Instant::now();
        let result = registry.execute(&call("c1", "store", raw), None).await;
        assert!(!result.is_error, "{}", &result.content[..result.content.len().min(200)]);
        assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
    }
    assert_eq!(counter.get(), 3);
}

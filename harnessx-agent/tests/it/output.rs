//! Typed results (`docs/output.md`): each output mode with the test model and
//! `FunctionModel`; an invalid answer then a valid one; always invalid (exactly 1 +
//! retries attempts, the run failing with the error that names the field); nested user
//! types round-tripping; a `final_result` call arriving with other calls (they run first,
//! in order); answers that are not JSON, nested too deep or huge; the streamed `run_end`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use harnessx_agent::model::{FunctionModel, Message, ModelRequest, ModelResponse, TestModel};
use harnessx_agent::output::{FINAL_RESULT_TOOL, Output, OutputMode};
use harnessx_agent::{Agent, AgentConfig, AgentError, AgentEvent, OutputError};
use harnessx_core::schemars::{self, JsonSchema};
use harnessx_core::{ToolCall, ToolDefinition, ToolHandler};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const MODES: [OutputMode; 3] = [OutputMode::Tool, OutputMode::Native, OutputMode::Prompted];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct City {
    name: String,
    population: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Capital,
    Port { depth_m: u32 },
    Twin(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Atlas {
    label: String,
    kind: Kind,
    motto: Option<String>,
    cities: Vec<City>,
    aliases: HashMap<String, Vec<String>>,
    ranks: BTreeMap<String, Option<i32>>,
    nested: Vec<Vec<Option<Kind>>>,
}

fn atlas() -> Atlas {
    Atlas {
        label: "Europe".into(),
        kind: Kind::Port { depth_m: 12 },
        motto: None,
        cities: vec![
            City { name: "Paris".into(), population: 2_100_000 },
            City { name: "Lyon".into(), population: 500_000 },
        ],
        aliases: HashMap::from([("Paris".into(), vec!["Lutetia".into()]), ("Lyon".into(), vec![])]),
        ranks: BTreeMap::from([("Paris".into(), Some(1)), ("Nice".into(), None)]),
        nested: vec![vec![Some(Kind::Capital), None], vec![Some(Kind::Twin("Rome".into()))]],
    }
}

fn config(mode: OutputMode) -> AgentConfig {
    AgentConfig { planning: false, output_mode: mode, ..AgentConfig::default() }
}

/// The response that gives `answer` in `mode`: a `final_result` call, or the text (in a
/// fence when prompted).
fn answer(mode: OutputMode, turn: usize, answer: &Value) -> ModelResponse {
    match mode {
        OutputMode::Tool => ModelResponse::tool_calls(vec![ToolCall::new(
            format!("out_{turn}"),
            FINAL_RESULT_TOOL,
            answer.to_string(),
        )]),
        OutputMode::Native => ModelResponse::text(answer.to_string()),
        OutputMode::Prompted => ModelResponse::text(format!("Here you go:\n```json\n{answer:#}\n```")),
    }
}

/// A model answering `answers` in turn (the last one again after them), counting
/// requests and keeping them.
fn scripted(mode: OutputMode, answers: Vec<Value>) -> (FunctionModel, Arc<Mutex<Vec<ModelRequest>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let model = FunctionModel::new(move |request| {
        let mut log = log.lock().unwrap();
        log.push(request.clone());
        let i = (log.len() - 1).min(answers.len() - 1);
        Ok(answer(mode, log.len(), &answers[i]))
    });
    (model, seen)
}

/// What the model was told after its first answer: the `final_result` call's error
/// result, or the user message after a text answer.
fn told_after_first(mode: OutputMode, second: &ModelRequest) -> String {
    let last = second.messages.last().unwrap();
    match (mode, last) {
        (OutputMode::Tool, Message::Tool { content, is_error: true, name, .. })
            if name == FINAL_RESULT_TOOL =>
        {
            content.clone()
        }
        (OutputMode::Native | OutputMode::Prompted, Message::User { content, .. }) => content.clone(),
        other => panic!("unexpected last message {other:?}"),
    }
}

#[tokio::test]
async fn the_test_model_answers_in_every_mode() {
    for mode in MODES {
        let agent = Agent::builder().model(TestModel::new()).config(config(mode)).build().unwrap();
        let city: City = agent.run_typed("The largest city?").await.unwrap();
        // A value made from the schema: required properties, minimal values.
        assert_eq!(city, City { name: "a".into(), population: 0 }, "{mode}");
    }
}

#[tokio::test]
async fn an_invalid_answer_then_a_valid_one_in_every_mode() {
    for mode in MODES {
        let (model, seen) = scripted(
            mode,
            vec![json!({"name": "Paris", "population": "many"}), json!({"name": "Paris", "population": 2})],
        );
        let agent = Agent::builder().model(model).config(config(mode)).build().unwrap();
        let result = agent.run_with_output("The largest city?", Output::of::<City>()).await.unwrap();
        assert_eq!(result.value, Some(json!({"name": "Paris", "population": 2})), "{mode}");
        assert_eq!(result.output, r#"{"name":"Paris","population":2}"#);
        assert_eq!(result.value_as::<City>().unwrap().population, 2);
        assert_eq!(result.turns, 2);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        let told = told_after_first(mode, &seen[1]);
        let line = match mode {
            OutputMode::Tool => {
                r#"invalid arguments for final_result: population: "many" is not of type "integer""#
            }
            _ => r#"invalid output: population: "many" is not of type "integer""#,
        };
        assert!(told.starts_with(line), "{mode}: {told}");
        assert!(!told.lines().next().unwrap().contains('\n'));
    }
}

#[tokio::test]
async fn always_invalid_makes_exactly_one_plus_retries_attempts_then_fails_naming_the_field() {
    for mode in MODES {
        for retries in [0, 1, 2, 5] {
            let (model, seen) = scripted(mode, vec![json!({"name": "Paris"})]);
            let mut cfg = config(mode);
            cfg.output_retries = retries;
            let agent = Agent::builder().model(model).config(cfg).build().unwrap();
            let e = agent.run_typed::<City>("The largest city?").await.unwrap_err();
            assert_eq!(seen.lock().unwrap().len() as u32, 1 + retries, "{mode} {retries}");
            let AgentError::Output(OutputError::Exhausted { attempts, error }) = &e else { panic!("{e:?}") };
            assert_eq!(*attempts, 1 + retries);
            assert!(error.ends_with(r#""population" is a required property"#), "{error}");
            assert!(e.to_string().contains("population"), "{e}");
        }
    }
    // The default is 2 retries: three attempts.
    let (model, seen) = scripted(OutputMode::Tool, vec![json!({})]);
    let agent = Agent::builder().model(model).config(config(OutputMode::Tool)).build().unwrap();
    agent.run_typed::<City>("x").await.unwrap_err();
    assert_eq!(seen.lock().unwrap().len(), 3);
    // An Output's own retries win over the agent's.
    let (model, seen) = scripted(OutputMode::Native, vec![json!({})]);
    let agent = Agent::builder().model(model).config(config(OutputMode::Tool)).build().unwrap();
    let output = Output::of::<City>().mode(OutputMode::Native).retries(0);
    agent.run_with_output("x", output).await.unwrap_err();
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn nested_user_types_round_trip_in_every_mode() {
    let expected = atlas();
    for mode in MODES {
        let (model, seen) = scripted(mode, vec![serde_json::to_value(&expected).unwrap()]);
        let agent = Agent::builder().model(model).config(config(mode)).build().unwrap();
        let got: Atlas = agent.run_typed("An atlas.").await.unwrap();
        assert_eq!(got, expected, "{mode}");
        let seen = seen.lock().unwrap();
        // What the model sees: canonical, no `$ref`, `$defs` or `title`.
        let shown = match mode {
            OutputMode::Tool => {
                seen[0].tools.iter().find(|t| t.name == FINAL_RESULT_TOOL).unwrap().input_schema.to_string()
            }
            _ => seen[0].output.as_ref().unwrap().schema.to_string(),
        };
        for word in ["$ref", "$defs", "\"title\"", "$schema"] {
            assert!(!shown.contains(word), "{mode}: {word} in {shown}");
        }
    }
    // A type that is not an object: the `response` of one.
    let list = vec![Kind::Capital, Kind::Twin("Rome".into())];
    for mode in MODES {
        let (model, seen) = scripted(mode, vec![json!({"response": serde_json::to_value(&list).unwrap()})]);
        let agent = Agent::builder().model(model).config(config(mode)).build().unwrap();
        let got: Vec<Kind> = agent.run_typed("Kinds.").await.unwrap();
        assert_eq!(got, list, "{mode}");
        let shown = match mode {
            OutputMode::Tool => seen.lock().unwrap()[0].tools.last().unwrap().input_schema.clone(),
            _ => seen.lock().unwrap()[0].output.as_ref().unwrap().schema.clone(),
        };
        assert_eq!(shown["required"], json!(["response"]));
        assert_eq!(shown["properties"]["response"]["type"], "array");
    }
}

/// A number that must be even: a rule serde enforces and the schema cannot say.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(try_from = "u32")]
struct Even(#[allow(dead_code, reason = "only decoded")] u32);

impl TryFrom<u32> for Even {
    type Error = String;
    fn try_from(n: u32) -> Result<Self, String> {
        if n.is_multiple_of(2) { Ok(Self(n)) } else { Err(format!("{n} is odd")) }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Pair {
    #[allow(dead_code, reason = "only decoded")]
    even: Even,
}

#[tokio::test]
async fn an_answer_that_fits_the_schema_but_does_not_decode_is_asked_again() {
    let (model, seen) = scripted(OutputMode::Native, vec![json!({"even": 3}), json!({"even": 4})]);
    let agent = Agent::builder().model(model).config(config(OutputMode::Native)).build().unwrap();
    agent.run_typed::<Pair>("An even number.").await.unwrap();
    let told = told_after_first(OutputMode::Native, &seen.lock().unwrap()[1]);
    assert!(told.starts_with("invalid output: 3 is odd"), "{told}");
}

#[tokio::test]
async fn a_final_result_call_with_other_calls_runs_after_them_in_call_order() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let tool = |name: &'static str| {
        let ran = ran.clone();
        ToolDefinition::new(
            name,
            "Records that it ran.",
            json!({"type": "object", "properties": {}}),
            ToolHandler::from_async(move |_, _| {
                let ran = ran.clone();
                async move {
                    ran.lock().unwrap().push(name);
                    Ok(format!("{name} done").into())
                }
            }),
        )
        .with_concurrent(false)
    };
    let calls = Arc::new(AtomicUsize::new(0));
    let count = calls.clone();
    let model = FunctionModel::new(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
        Ok(ModelResponse::tool_calls(vec![
            ToolCall::new("a", "first", "{}"),
            ToolCall::new("r", FINAL_RESULT_TOOL, r#"{"name": "Paris", "population": 1}"#),
            ToolCall::new("b", "second", "{}"),
            ToolCall::new("r2", FINAL_RESULT_TOOL, r#"{"name": "Lyon", "population": 2}"#),
        ]))
    });
    let agent = Agent::builder()
        .model(model)
        .tool(tool("first"))
        .tool(tool("second"))
        .config(config(OutputMode::Tool))
        .build()
        .unwrap();
    let mut stream = agent.run_stream_with_output("Go.", Output::of::<City>());
    let events: Vec<AgentEvent> = stream.by_ref().collect().await;
    let result = stream.into_result().unwrap().unwrap();
    assert_eq!(*ran.lock().unwrap(), ["first", "second"]);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the run ended after the batch");
    assert_eq!(result.value, Some(json!({"name": "Paris", "population": 1})));
    // Every call has its result, in call order; the second final_result is not used.
    let results: Vec<(String, String)> = result
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { call_id, content, .. } => Some((call_id.clone(), content.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("a".to_owned(), "first done".to_owned()),
            ("r".into(), "Final answer accepted.".into()),
            ("b".into(), "second done".into()),
            ("r2".into(), "Not used: an earlier final_result call of this turn is the final answer.".into()),
        ]
    );
    let Some(AgentEvent::RunEnd { output, value, turns, .. }) = events.last() else { panic!("{events:?}") };
    assert_eq!((output.as_str(), value, *turns), (r#"{"name":"Paris","population":1}"#, &result.value, 1));
    let line = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(line["value"], json!({"name": "Paris", "population": 1}));
}

#[tokio::test]
async fn a_text_answer_in_tool_mode_is_an_attempt_and_tools_stay_available() {
    let (model, seen) = scripted(OutputMode::Native, vec![json!({"name": "Paris", "population": 1})]);
    let agent = Agent::builder().model(model).config(config(OutputMode::Tool)).build().unwrap();
    let e = agent.run_typed::<City>("x").await.unwrap_err();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    let Message::User { content, .. } = seen[1].messages.last().unwrap() else { panic!() };
    assert!(
        content
            .starts_with("invalid output: the final answer must be given by calling the final_result tool")
    );
    assert!(e.to_string().contains("final_result"), "{e}");
}

#[tokio::test]
async fn a_registered_final_result_tool_clashes_with_tool_mode_only() {
    let def = ToolDefinition::new(
        "finalResult",
        "Mine.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(|_, _| async { Ok("x".into()) }),
    );
    let agent = Agent::builder()
        .model(TestModel::new())
        .tool(def.clone())
        .config(config(OutputMode::Tool))
        .build()
        .unwrap();
    let e = agent.run_typed::<City>("x").await.unwrap_err();
    assert!(
        matches!(&e, AgentError::Output(OutputError::ToolNameTaken(name)) if name == "finalResult"),
        "{e:?}"
    );
    let agent = Agent::builder()
        .model(TestModel::new())
        .tool(def)
        .config(config(OutputMode::Native))
        .build()
        .unwrap();
    agent.run_typed::<City>("x").await.unwrap();
}

#[tokio::test]
async fn answers_that_are_not_json_deep_or_huge_are_refused_without_a_panic() {
    let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    let huge = format!("{{\"name\": \"{}\", \"population\": \"x\"}}", "n".repeat(5_000_000));
    let texts =
        vec!["Sorry, I can't.".to_owned(), "{\"name\": ".to_owned(), deep.clone(), huge, String::new()];
    for mode in [OutputMode::Native, OutputMode::Prompted] {
        let texts = texts.clone();
        let seen = Arc::new(AtomicUsize::new(0));
        let count = seen.clone();
        let model = FunctionModel::new(move |_| {
            let i = count.fetch_add(1, Ordering::SeqCst);
            Ok(ModelResponse::text(texts[i.min(texts.len() - 1)].clone()))
        });
        let mut cfg = config(mode);
        cfg.output_retries = 4;
        let agent = Agent::builder().model(model).config(cfg).build().unwrap();
        let result = agent.run_with_output("x", Output::of::<City>()).await;
        let e = result.unwrap_err().to_string();
        assert_eq!(seen.load(Ordering::SeqCst), 5);
        assert!(e.contains("the answer is empty"), "{e}");
        assert!(!e.contains('\n'));
    }
    // The same as final_result arguments: refused with one line each.
    let model = FunctionModel::new(move |_| {
        Ok(ModelResponse::tool_calls(vec![ToolCall::new("c", FINAL_RESULT_TOOL, deep.clone())]))
    });
    let agent = Agent::builder().model(model).config(config(OutputMode::Tool)).build().unwrap();
    let e = agent.run_typed::<City>("x").await.unwrap_err().to_string();
    assert!(
        e.ends_with("invalid arguments for final_result: the arguments nest more than 100 levels deep"),
        "{e}"
    );
}

#[tokio::test]
async fn an_explicit_schema_that_is_not_usable_fails_before_any_request() {
    for schema in [json!([1]), json!("x"), json!({"type": 7})] {
        assert!(matches!(Output::json_schema(schema), Err(OutputError::Schema(_))));
    }
    let value = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let output = Output::json_schema(value).unwrap().mode(OutputMode::Prompted);
    let agent = Agent::builder().model(TestModel::new()).config(config(OutputMode::Tool)).build().unwrap();
    let result = agent.run_with_output("x", output).await.unwrap();
    assert_eq!(result.value, Some(json!({"ok": false})));
}

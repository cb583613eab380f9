//! Planning keeps provider requests cache-friendly: on the wire, each request's messages
//! begin with the previous request's messages byte for byte, and everything else (model,
//! system prompt with the planning line, tools) is unchanged. Checked on the raw bodies a
//! loopback OpenAI-compatible and Anthropic server receive.

use crate::common;

use common::{Reply, Server};
use harnessx_agent::model::{AnthropicModel, Model, OpenAiModel};
use harnessx_agent::{Agent, PLANNING_PROMPT_LINE};
use serde_json::{Value, json};

const FIRST_PLAN: &str = r#"{"todos":[{"content":"Read the notes","status":"in_progress"},{"content":"Answer","status":"pending"}]}"#;
const SECOND_PLAN: &str = r#"{"todos":[{"content":"Read the notes","status":"completed"},{"content":"Answer","status":"in_progress"}]}"#;

/// Where the `messages` array sits in a raw body: (start of `[`, end after `]`).
fn messages_span(raw: &str) -> (usize, usize) {
    let key = raw.find("\"messages\":").expect("a messages array");
    let start = key + raw[key..].find('[').unwrap();
    let mut values = serde_json::Deserializer::from_str(&raw[start..]).into_iter::<Value>();
    values.next().unwrap().unwrap();
    (start, start + values.byte_offset())
}

fn assert_prefix_stable(raws: &[String]) {
    assert!(raws.len() >= 3, "expected a multi-turn run, got {} requests", raws.len());
    for pair in raws.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let (sa, ea) = messages_span(a);
        let (sb, eb) = messages_span(b);
        let earlier = &a[sa..ea - 1]; // without the closing bracket
        let later = &b[sb..eb];
        assert!(later.starts_with(earlier), "the earlier messages changed:\n{earlier}\n---\n{later}");
        let mut rest_a: Value = serde_json::from_str(a).unwrap();
        let mut rest_b: Value = serde_json::from_str(b).unwrap();
        rest_a["messages"] = Value::Null;
        rest_b["messages"] = Value::Null;
        assert_eq!(rest_a, rest_b, "model, system prompt and tools must not change between requests");
        assert_eq!(&a[..sa], &b[..sb], "the bytes before the messages must not change");
    }
    // The current list rides on the newest message once it exists, and earlier copies stay.
    let last = &raws[raws.len() - 1];
    // Attached to each of the three tool results it followed, plus read_todos's own answer.
    assert_eq!(last.matches("<todo_list>").count(), 4, "{last}");
}

async fn run(model: impl Model + 'static) {
    let agent = Agent::builder().model(model).build().unwrap();
    let result = agent.run("Summarize my notes.").await.unwrap();
    assert_eq!(result.output, "Done.");
}

#[tokio::test]
async fn openai_compatible_requests_keep_their_prefix() {
    let calls = |id: &str, name: &str, args: &str| {
        json!({"id": "r", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": args}}]}}]})
        .to_string()
    };
    let done =
        json!({"id": "r", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "Done."}}]})
        .to_string();
    let server = Server::start(vec![
        Reply::json(200, calls("c1", "write_todos", FIRST_PLAN)),
        Reply::json(200, calls("c2", "write_todos", SECOND_PLAN)),
        Reply::json(200, calls("c3", "read_todos", "{}")),
        Reply::json(200, done),
    ]);
    run(OpenAiModel::new("gpt-4o").base_url(format!("{}/v1", server.url)).api_key("sk-test")).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[0].body["messages"][0]["content"], PLANNING_PROMPT_LINE);
    let raws: Vec<String> = requests.iter().map(|r| String::from_utf8(r.raw.clone()).unwrap()).collect();
    assert_prefix_stable(&raws);
}

#[tokio::test]
async fn anthropic_requests_keep_their_prefix() {
    let calls = |id: &str, name: &str, args: &str| {
        let input: Value = serde_json::from_str(args).unwrap();
        json!({"id": "m", "type": "message", "role": "assistant", "model": "claude",
            "content": [{"type": "tool_use", "id": id, "name": name, "input": input}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}})
        .to_string()
    };
    let done = json!({"id": "m", "type": "message", "role": "assistant", "model": "claude",
        "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 2}})
    .to_string();
    let server = Server::start(vec![
        Reply::json(200, calls("c1", "write_todos", FIRST_PLAN)),
        Reply::json(200, calls("c2", "write_todos", SECOND_PLAN)),
        Reply::json(200, calls("c3", "read_todos", "{}")),
        Reply::json(200, done),
    ]);
    run(AnthropicModel::new("claude-sonnet-4-5").base_url(&server.url).api_key("sk-ant-test")).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[0].body["system"], PLANNING_PROMPT_LINE);
    let raws: Vec<String> = requests.iter().map(|r| String::from_utf8(r.raw.clone()).unwrap()).collect();
    assert_prefix_stable(&raws);
}

//! Planning keeps provider requests cache-friendly: on the wire, each request's messages
//! begin with the previous request's messages byte for byte, and everything else (model,
//! system prompt with the planning line, tools) is unchanged. Checked on the raw bodies a
//! loopback OpenAI-compatible and Anthropic server receive. For Anthropic, the cache
//! breakpoints too: where they sit, that the prefix they close is the same bytes each
//! request, and that the cache reads the server reports are counted.

use crate::common;

use common::{Reply, Server};
use harnessx_agent::model::{AnthropicModel, Model, OpenAiModel};
use harnessx_agent::{Agent, PLANNING_PROMPT_LINE, RunStatus};
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
    assert_eq!(requests[0].body["system"][0]["text"], PLANNING_PROMPT_LINE);
    // The breakpoint on the message before the newest turn moves on each request; the
    // marker is not part of the cached text, so the prefix is compared without it.
    let raws: Vec<String> =
        requests.iter().map(|r| String::from_utf8(r.raw.clone()).unwrap().replace(MARKER, "")).collect();
    assert_prefix_stable(&raws);
}

/// A breakpoint as the adapter writes it, after the block's last field.
const MARKER: &str = r#","cache_control":{"type":"ephemeral"}"#;

/// A non-streamed Messages API answer with realistic usage: the tokens after the last
/// breakpoint, those written to the cache and those read from it.
fn answer(content: Value, stop: &str, usage: [u64; 4]) -> Reply {
    let [input, write, read, output] = usage;
    Reply::json(
        200,
        json!({"id": "msg", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": input, "cache_creation_input_tokens": write,
                "cache_read_input_tokens": read, "output_tokens": output,
                "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0},
                "service_tier": "standard"}})
        .to_string(),
    )
}

#[tokio::test]
async fn anthropic_breakpoints_close_the_same_bytes_each_request_and_cache_reads_are_counted() {
    let call = |id: &str, name: &str, input: Value| json!([{"type": "tool_use", "id": id, "name": name, "input": input}]);
    let first_plan: Value = serde_json::from_str(FIRST_PLAN).unwrap();
    let server = Server::start(vec![
        answer(call("c1", "write_todos", first_plan), "tool_use", [24, 1830, 0, 62]),
        answer(call("c2", "read_todos", json!({})), "tool_use", [31, 118, 1830, 20]),
        answer(json!([{"type": "text", "text": "Done."}]), "end_turn", [40, 74, 1948, 3]),
    ]);
    let model = AnthropicModel::new("claude-sonnet-4-5").base_url(&server.url).api_key("sk-ant-test");
    let agent = Agent::builder().model(model).build().unwrap();
    let state = agent.run("Summarize my notes.").await.unwrap();
    assert_eq!((state.status, state.output.as_str()), (RunStatus::Completed, "Done."));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let raws: Vec<String> = requests.iter().map(|r| String::from_utf8(r.raw.clone()).unwrap()).collect();

    // Where the breakpoints sit: the last tool, the system prompt, and (from the second
    // request on) the last block of the message before the newest turn.
    for (i, request) in requests.iter().enumerate() {
        let body = &request.body;
        let tools = body["tools"].as_array().unwrap();
        assert!(tools[..tools.len() - 1].iter().all(|t| t.get("cache_control").is_none()));
        assert_eq!(tools.last().unwrap()["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(body["system"][0]["cache_control"], json!({"type": "ephemeral"}));
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2 * i + 1);
        let marked: Vec<(usize, usize)> = messages
            .iter()
            .enumerate()
            .flat_map(|(m, message)| {
                let blocks = message["content"].as_array().cloned().unwrap_or_default();
                blocks
                    .into_iter()
                    .enumerate()
                    .filter(|(_, b)| b.get("cache_control").is_some())
                    .map(move |(b, _)| (m, b))
            })
            .collect();
        let want = if i == 0 { vec![] } else { vec![(messages.len() - 2, 0)] };
        assert_eq!(marked, want, "request {i}");
        assert!(raws[i].matches("cache_control").count() <= 4);
    }
    // Requests 2 and 3 mark the tool calls c1 and c2.
    assert_eq!(requests[1].body["messages"][1]["content"][0]["id"], "c1");
    assert_eq!(requests[2].body["messages"][3]["content"][0]["id"], "c2");

    // The bytes up to the second breakpoint (model, limit, system prompt with its marker)
    // are the same in every request, and so are the tools with theirs.
    let second = |raw: &str| {
        let system = raw.find(r#""system":"#).unwrap();
        system + raw[system..].find(MARKER).unwrap() + MARKER.len()
    };
    let tools = |raw: &str| raw[raw.find(r#""tools":"#).unwrap()..].to_owned();
    for raw in &raws[1..] {
        assert_eq!(&raw[..second(raw)], &raws[0][..second(&raws[0])]);
        assert_eq!(tools(raw), tools(&raws[0]));
    }
    // Up to the third breakpoint, a request is the previous request's text (its own
    // newest turn included, marker left out).
    for pair in raws.windows(2) {
        let (earlier, later) = (pair[0].replace(MARKER, ""), &pair[1]);
        let third = later.match_indices(MARKER).nth(1).unwrap().0;
        let cached = later[..third].replace(MARKER, "");
        let earlier_messages = &earlier[..earlier.rfind(r#"],"tools":"#).unwrap()];
        assert!(
            cached.starts_with(earlier_messages),
            "the previous request is not a prefix of the cached part:\n{earlier_messages}\n---\n{cached}"
        );
    }

    // The cache reads the server reported, from the second response on.
    let cached: Vec<u64> = state.usage_by_turn.iter().map(|u| u.cached_input_tokens).collect();
    assert_eq!(cached, [0, 1830, 1948]);
    let written: Vec<u64> = state.usage_by_turn.iter().map(|u| u.cache_write_tokens).collect();
    assert_eq!(written, [1830, 118, 74]);
    assert_eq!(state.usage.cached_input_tokens, 1830 + 1948);
    assert_eq!(state.usage.input_tokens, 24 + 1830 + 31 + 118 + 1830 + 40 + 74 + 1948);
}

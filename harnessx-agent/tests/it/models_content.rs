//! Media parts reaching each provider in its shape (issue 43): a user image, a PDF and an
//! image inside a tool result, sent streamed and not to a loopback server, the body it
//! received parsed and its parts asserted (the base64 decoded back to the bytes sent);
//! the same bodies as `request_body()` shows them; media by URL; a kind a provider cannot
//! take named in a line; and a text-only request whose bytes on the wire are the body's
//! JSON as it was always written.
//!
//! OpenAI's own API (`api.openai.com`) cannot be reached on loopback (a loopback base URL
//! is an OpenAI-compatible server), so its bodies are checked through `request_body()`,
//! which is the body sent with its base64 filled in (the compatible-server tests check
//! that the two agree byte for byte).

use crate::common;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use common::{Reply, Server, collect, fixture};
use harnessx_agent::model::{
    AnthropicModel, GeminiModel, Message, Model, ModelRequest, OpenAiModel, OpenAiResponsesModel,
};
use harnessx_core::{Part, ToolCall, ToolOutput, ToolResult};
use serde_json::{Value, json};

/// A PNG signature and 3000 bytes that use every base64 character.
fn png() -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend((0..3000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    bytes
}

fn pdf() -> Vec<u8> {
    let mut bytes = b"%PDF-1.7\n".to_vec();
    bytes.extend((0..1000u32).map(|i| (i.wrapping_mul(40_503) >> 5) as u8));
    bytes
}

fn user_image() -> ModelRequest {
    let image = Part::image("image/png", png());
    ModelRequest {
        messages: vec![Message::user_with_parts("What is this?", vec![image])],
        ..ModelRequest::default()
    }
}

fn user_pdf() -> ModelRequest {
    let file = Part::file("application/pdf", Some("report.pdf".into()), pdf());
    ModelRequest {
        messages: vec![Message::user_with_parts("Summarize it.", vec![file])],
        ..ModelRequest::default()
    }
}

const SHOT_TEXT: &str = "[image: image/png, 3008 bytes]";

/// A screenshot tool's result carrying the image (as an MCP server's would: a part).
fn tool_image() -> ModelRequest {
    let output = ToolOutput::text(SHOT_TEXT).with_part(Part::image("image/png", png()));
    ModelRequest {
        messages: vec![
            Message::user("Take a screenshot."),
            Message::assistant("", vec![ToolCall::new("call_1", "screenshot", "{}")]),
            Message::tool(&ToolResult::success("call_1", "screenshot", output)),
        ],
        ..ModelRequest::default()
    }
}

pub(crate) fn decode(base64: &Value) -> Vec<u8> {
    STANDARD.decode(base64.as_str().expect("base64 text")).expect("valid base64")
}

/// The bytes of a `data:` URL of `media_type`.
pub(crate) fn data_url(url: &Value, media_type: &str) -> Vec<u8> {
    let url = url.as_str().expect("a URL");
    let prefix = format!("data:{media_type};base64,");
    let base64 =
        url.strip_prefix(&prefix).unwrap_or_else(|| panic!("not a {media_type} data URL: {url:.60}"));
    decode(&json!(base64))
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Api {
    /// Chat Completions at a server other than OpenAI's.
    Compatible,
    Responses,
    Anthropic,
    Gemini(&'static str),
}

pub(crate) const APIS: [Api; 4] =
    [Api::Compatible, Api::Responses, Api::Anthropic, Api::Gemini("gemini-3-pro-preview")];

pub(crate) fn model(api: Api, server: &Server) -> Box<dyn Model> {
    let v1 = format!("{}/v1", server.url);
    match api {
        Api::Compatible => Box::new(OpenAiModel::new("qwen-vl").base_url(v1).api_key("sk-test")),
        Api::Responses => Box::new(OpenAiResponsesModel::new("gpt-4.1").base_url(v1).api_key("sk-test")),
        Api::Anthropic => {
            Box::new(AnthropicModel::new("claude-sonnet-4-5").base_url(&server.url).api_key("sk-ant-test"))
        }
        Api::Gemini(name) => Box::new(GeminiModel::new(name).base_url(&server.url).api_key("gm-test")),
    }
}

/// What `request_body()` shows for the request the model sends.
fn shown_body(api: Api, server: &Server, request: &ModelRequest, stream: bool) -> Value {
    let v1 = format!("{}/v1", server.url);
    match api {
        Api::Compatible => OpenAiModel::new("qwen-vl").base_url(v1).request_body(request, stream),
        Api::Responses => OpenAiResponsesModel::new("gpt-4.1").base_url(v1).request_body(request, stream),
        Api::Anthropic => AnthropicModel::new("claude-sonnet-4-5").request_body(request, stream),
        Api::Gemini(name) => GeminiModel::new(name).request_body(request),
    }
}

pub(crate) fn reply(api: Api, stream: bool) -> Reply {
    match (api, stream) {
        (Api::Compatible, true) => Reply::sse(fixture("openai/chat_stream_text_only_gpt4o.sse"), None),
        (Api::Compatible, false) => Reply::json(
            200,
            json!({"choices": [{"index": 0, "message": {"content": "A chart."}, "finish_reason": "stop"}]})
                .to_string(),
        ),
        (Api::Responses, true) => {
            Reply::sse(fixture("openai_responses/reasoning_calculator_turn0.derived.sse"), Some(64))
        }
        (Api::Responses, false) => {
            Reply::json(200, fixture("openai_responses/nonstream_reasoning_message.json"))
        }
        (Api::Anthropic, true) => Reply::sse(fixture("anthropic/messages_stream_text_only.sse"), Some(64)),
        (Api::Anthropic, false) => {
            Reply::json(200, fixture("vercel_ai/anthropic_nonstream_tool_no_args.json"))
        }
        (Api::Gemini(_), true) => Reply::sse(fixture("vercel_ai/google_text.derived.sse"), Some(64)),
        (Api::Gemini(_), false) => Reply::json(200, fixture("vercel_ai/google_text.json")),
    }
}

/// Sends `request` to a loopback server as `api` (streamed or not), checks the answer
/// came through and that the bytes received are the body `request_body()` shows, and
/// returns the body received.
async fn sent(api: Api, request: &ModelRequest, stream: bool) -> Value {
    let server = Server::start(vec![reply(api, stream)]);
    let model = model(api, &server);
    if stream {
        let (_, outcome) = collect(model.stream(request)).await;
        outcome.unwrap_or_else(|e| panic!("{api:?} streamed: {e}"));
    } else {
        model.complete(request).await.unwrap_or_else(|e| panic!("{api:?}: {e}"));
    }
    let received = server.requests().remove(0);
    assert_eq!(received.body, shown_body(api, &server, request, stream), "{api:?} stream={stream}");
    received.body
}

#[tokio::test]
async fn a_user_image_reaches_every_provider_in_its_shape() {
    for api in APIS {
        for stream in [false, true] {
            let body = sent(api, &user_image(), stream).await;
            let case = format!("{api:?} stream={stream}");
            match api {
                Api::Compatible => {
                    let content = &body["messages"][0]["content"];
                    assert_eq!(content[0], json!({"type": "text", "text": "What is this?"}), "{case}");
                    assert_eq!(content[1]["type"], "image_url", "{case}");
                    assert_eq!(data_url(&content[1]["image_url"]["url"], "image/png"), png(), "{case}");
                    assert_eq!(content.as_array().unwrap().len(), 2, "{case}");
                }
                Api::Responses => {
                    let message = &body["input"][0];
                    assert_eq!(message["role"], "user", "{case}");
                    let content = &message["content"];
                    assert_eq!(content[0], json!({"type": "input_text", "text": "What is this?"}), "{case}");
                    assert_eq!(content[1]["type"], "input_image", "{case}");
                    assert_eq!(content[1]["detail"], "auto", "{case}");
                    assert_eq!(data_url(&content[1]["image_url"], "image/png"), png(), "{case}");
                }
                Api::Anthropic => {
                    let content = &body["messages"][0]["content"];
                    assert_eq!(content[0], json!({"type": "text", "text": "What is this?"}), "{case}");
                    let image = &content[1];
                    assert_eq!(image["type"], "image", "{case}");
                    assert_eq!(image["source"]["type"], "base64", "{case}");
                    assert_eq!(image["source"]["media_type"], "image/png", "{case}");
                    assert_eq!(decode(&image["source"]["data"]), png(), "{case}");
                }
                Api::Gemini(_) => {
                    let parts = &body["contents"][0]["parts"];
                    assert_eq!(body["contents"][0]["role"], "user", "{case}");
                    assert_eq!(parts[0], json!({"text": "What is this?"}), "{case}");
                    assert_eq!(parts[1]["inlineData"]["mimeType"], "image/png", "{case}");
                    assert_eq!(decode(&parts[1]["inlineData"]["data"]), png(), "{case}");
                }
            }
        }
    }
}

#[tokio::test]
async fn a_pdf_reaches_every_provider_that_takes_one_and_is_named_where_not() {
    for api in APIS {
        for stream in [false, true] {
            let body = sent(api, &user_pdf(), stream).await;
            let case = format!("{api:?} stream={stream}");
            match api {
                // vLLM and llama-server take no `file` parts: the PDF is a line naming it.
                Api::Compatible => assert_eq!(
                    body["messages"][0]["content"][1],
                    json!({"type": "text", "text": "[file: application/pdf, report.pdf, 1009 bytes — not supported by OpenAI-compatible servers]"}),
                    "{case}"
                ),
                Api::Responses => {
                    let file = &body["input"][0]["content"][1];
                    assert_eq!(file["type"], "input_file", "{case}");
                    assert_eq!(file["filename"], "report.pdf", "{case}");
                    assert_eq!(data_url(&file["file_data"], "application/pdf"), pdf(), "{case}");
                }
                Api::Anthropic => {
                    let document = &body["messages"][0]["content"][1];
                    assert_eq!(document["type"], "document", "{case}");
                    assert_eq!(document["source"]["type"], "base64", "{case}");
                    assert_eq!(document["source"]["media_type"], "application/pdf", "{case}");
                    assert_eq!(decode(&document["source"]["data"]), pdf(), "{case}");
                }
                Api::Gemini(_) => {
                    let inline = &body["contents"][0]["parts"][1]["inlineData"];
                    assert_eq!(inline["mimeType"], "application/pdf", "{case}");
                    assert_eq!(decode(&inline["data"]), pdf(), "{case}");
                }
            }
        }
    }
}

#[tokio::test]
async fn an_image_in_a_tool_result_reaches_every_provider_where_it_takes_one() {
    for api in APIS {
        for stream in [false, true] {
            let body = sent(api, &tool_image(), stream).await;
            let case = format!("{api:?} stream={stream}");
            match api {
                // A `tool` message takes no image: its text stays, the image follows in a
                // user message under a line naming the call.
                Api::Compatible => {
                    let messages = body["messages"].as_array().unwrap();
                    assert_eq!(messages.len(), 4, "{case}");
                    assert_eq!(
                        messages[2],
                        json!({"role": "tool", "tool_call_id": "call_1", "content": SHOT_TEXT}),
                        "{case}"
                    );
                    assert_eq!(messages[3]["role"], "user", "{case}");
                    let content = &messages[3]["content"];
                    assert_eq!(
                        content[0],
                        json!({"type": "text", "text": "[screenshot result, call call_1]"})
                    );
                    assert_eq!(data_url(&content[1]["image_url"]["url"], "image/png"), png(), "{case}");
                }
                Api::Responses => {
                    let output = body["input"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|item| item["type"] == "function_call_output")
                        .unwrap_or_else(|| panic!("{case}: no function_call_output"));
                    assert_eq!(output["call_id"], "call_1", "{case}");
                    let content = &output["output"];
                    assert_eq!(content[0], json!({"type": "input_text", "text": SHOT_TEXT}), "{case}");
                    assert_eq!(content[1]["type"], "input_image", "{case}");
                    assert_eq!(data_url(&content[1]["image_url"], "image/png"), png(), "{case}");
                }
                Api::Anthropic => {
                    let result = &body["messages"][2]["content"][0];
                    assert_eq!(result["type"], "tool_result", "{case}");
                    assert_eq!(result["tool_use_id"], "call_1", "{case}");
                    assert_eq!(result["content"][0], json!({"type": "text", "text": SHOT_TEXT}), "{case}");
                    let image = &result["content"][1];
                    assert_eq!(image["type"], "image", "{case}");
                    assert_eq!(image["source"]["media_type"], "image/png", "{case}");
                    assert_eq!(decode(&image["source"]["data"]), png(), "{case}");
                }
                // Gemini 3 takes media in a function response's own parts.
                Api::Gemini(_) => {
                    let turn = &body["contents"][2];
                    assert_eq!(turn["role"], "user", "{case}");
                    assert_eq!(turn["parts"].as_array().unwrap().len(), 1, "{case}");
                    let response = &turn["parts"][0]["functionResponse"];
                    assert_eq!(response["name"], "screenshot", "{case}");
                    assert_eq!(response["response"], json!({"result": SHOT_TEXT}), "{case}");
                    let inline = &response["parts"][0]["inlineData"];
                    assert_eq!(inline["mimeType"], "image/png", "{case}");
                    assert_eq!(decode(&inline["data"]), png(), "{case}");
                }
            }
        }
    }
}

// Models before Gemini 3 take no media in a function response: the image follows the
// turn's function responses, in the same user turn, under a line naming the call.
#[tokio::test]
async fn before_gemini_3_a_results_image_follows_its_function_response() {
    for stream in [false, true] {
        let body = sent(Api::Gemini("gemini-2.5-flash"), &tool_image(), stream).await;
        let parts = body["contents"][2]["parts"].as_array().unwrap();
        assert_eq!(
            parts[0],
            json!({"functionResponse": {"name": "screenshot", "response": {"result": SHOT_TEXT}}}),
            "stream={stream}"
        );
        assert_eq!(parts[1], json!({"text": "[screenshot result, call call_1]"}));
        assert_eq!(parts[2]["inlineData"]["mimeType"], "image/png");
        assert_eq!(decode(&parts[2]["inlineData"]["data"]), png());
        assert_eq!(parts.len(), 3);
    }
}

/// OpenAI's own Chat Completions API: the shapes of the compatible servers, and a PDF as a
/// `file` part (`filename`, `file_data`), and WAV or MP3 audio as `input_audio`.
#[test]
fn openai_chat_takes_images_pdfs_and_audio_in_user_content_and_images_after_tool_results() {
    let openai = OpenAiModel::new("gpt-4o").base_url("https://api.openai.com/v1").api_key("sk-test");
    let body = openai.request_body(&user_image(), false);
    assert_eq!(data_url(&body["messages"][0]["content"][1]["image_url"]["url"], "image/png"), png());

    let body = openai.request_body(&user_pdf(), true);
    let file = &body["messages"][0]["content"][1];
    assert_eq!(file["type"], "file");
    assert_eq!(file["file"]["filename"], "report.pdf");
    assert_eq!(data_url(&file["file"]["file_data"], "application/pdf"), pdf());

    let body = openai.request_body(&tool_image(), false);
    assert_eq!(body["messages"][2], json!({"role": "tool", "tool_call_id": "call_1", "content": SHOT_TEXT}));
    assert_eq!(body["messages"][3]["content"][0]["text"], "[screenshot result, call call_1]");
    assert_eq!(data_url(&body["messages"][3]["content"][1]["image_url"]["url"], "image/png"), png());

    let wav = b"RIFF\x24\0\0\0WAVEfmt ".to_vec();
    let audio = ModelRequest {
        messages: vec![Message::user_with_parts(
            "",
            vec![Part::audio("audio/wav", wav.clone()), Part::audio("audio/ogg", vec![1, 2, 3])],
        )],
        ..ModelRequest::default()
    };
    let content = &openai.request_body(&audio, false)["messages"][0]["content"];
    assert_eq!(content[0]["type"], "input_audio");
    assert_eq!(content[0]["input_audio"]["format"], "wav");
    assert_eq!(decode(&content[0]["input_audio"]["data"]), wav);
    assert_eq!(
        content[1],
        json!({"type": "text", "text": "[audio: audio/ogg, 3 bytes — not supported by OpenAI Chat Completions]"})
    );
}

// Several results of one turn with media: the `tool` messages stay together (the API
// wants them right after the calls), and one user message carries every result's media.
#[test]
fn openai_chat_puts_a_turns_result_media_in_one_user_message_after_all_its_tool_messages() {
    let shot = |id: &str| {
        let output = ToolOutput::text("shot").with_part(Part::image("image/png", png()));
        Message::tool(&ToolResult::success(id, "screenshot", output))
    };
    let request = ModelRequest {
        messages: vec![
            Message::user("Two shots."),
            Message::assistant(
                "",
                vec![ToolCall::new("a", "screenshot", "{}"), ToolCall::new("b", "screenshot", "{}")],
            ),
            shot("a"),
            shot("b"),
        ],
        ..ModelRequest::default()
    };
    let body = OpenAiModel::new("gpt-4o").base_url("http://127.0.0.1:9/v1").request_body(&request, false);
    let roles: Vec<&str> =
        body["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "user"]);
    let content = &body["messages"][4]["content"];
    assert_eq!(content[0]["text"], "[screenshot result, call a]");
    assert_eq!(content[2]["text"], "[screenshot result, call b]");
    assert_eq!(content.as_array().unwrap().len(), 4);
}

#[test]
fn media_given_by_url_go_as_urls_where_the_provider_fetches_them() {
    let image = Part::image_url("image/png", "https://example.com/a.png");
    let pdf = Part::File {
        media_type: "application/pdf".into(),
        name: None,
        data: harnessx_core::Blob::Url("https://example.com/a.pdf".into()),
    };
    let request = ModelRequest {
        messages: vec![Message::user_with_parts("Look.", vec![image, pdf])],
        ..ModelRequest::default()
    };
    let chat = OpenAiModel::new("m").base_url("http://127.0.0.1:9/v1").request_body(&request, false);
    assert_eq!(chat["messages"][0]["content"][1]["image_url"]["url"], "https://example.com/a.png");
    assert_eq!(
        chat["messages"][0]["content"][2]["text"],
        "[file: application/pdf, https://example.com/a.pdf — not supported by OpenAI-compatible servers]"
    );
    let responses = OpenAiResponsesModel::new("m").request_body(&request, false);
    assert_eq!(responses["input"][0]["content"][1]["image_url"], "https://example.com/a.png");
    assert_eq!(
        responses["input"][0]["content"][2],
        json!({"type": "input_file", "file_url": "https://example.com/a.pdf"})
    );
    let anthropic = AnthropicModel::new("m").request_body(&request, false);
    assert_eq!(
        anthropic["messages"][0]["content"][1],
        json!({"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}})
    );
    assert_eq!(
        anthropic["messages"][0]["content"][2],
        json!({"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}})
    );
    let gemini = GeminiModel::new("gemini-2.5-flash").request_body(&request);
    assert_eq!(
        gemini["contents"][0]["parts"][1],
        json!({"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/a.png"}})
    );
}

#[test]
fn a_kind_a_provider_cannot_take_is_a_line_naming_it() {
    let request = ModelRequest {
        messages: vec![Message::user_with_parts("Listen.", vec![Part::audio("audio/wav", vec![0u8; 1234])])],
        ..ModelRequest::default()
    };
    let anthropic = AnthropicModel::new("m").request_body(&request, false);
    assert_eq!(
        anthropic["messages"][0]["content"][1],
        json!({"type": "text", "text": "[audio: audio/wav, 1234 bytes — not supported by anthropic]"})
    );
    let responses = OpenAiResponsesModel::new("m").request_body(&request, false);
    assert_eq!(
        responses["input"][0]["content"][1],
        json!({"type": "input_text", "text": "[audio: audio/wav, 1234 bytes — not supported by the OpenAI Responses API]"})
    );
    // Gemini takes audio inline.
    let gemini = GeminiModel::new("gemini-2.5-flash").request_body(&request);
    assert_eq!(gemini["contents"][0]["parts"][1]["inlineData"]["mimeType"], "audio/wav");
}

// Issue 43: a text-only request is byte for byte what it was before media: the bytes on
// the wire are its JSON as `Value` writes it (what was sent before), and the pinned
// bodies of `models_openai`, `models_anthropic`, `models_gemini` and `models_responses`
// pin that JSON itself, unchanged.
#[tokio::test]
async fn a_text_only_request_is_sent_byte_for_byte_as_before() {
    let output = ToolOutput::text("18C");
    let request = ModelRequest {
        system: Some("Be brief.".into()),
        messages: vec![
            Message::user("Weather in Paris?"),
            Message::assistant("Checking.", vec![ToolCall::new("call_1", "weather", r#"{"city":"Paris"}"#)]),
            Message::tool(&ToolResult::success("call_1", "weather", output)),
        ],
        ..ModelRequest::default()
    };
    for api in [Api::Compatible, Api::Responses, Api::Anthropic, Api::Gemini("gemini-2.5-flash")] {
        for stream in [false, true] {
            let server = Server::start(vec![reply(api, stream)]);
            let model = model(api, &server);
            if stream {
                collect(model.stream(&request)).await.1.unwrap();
            } else {
                model.complete(&request).await.unwrap();
            }
            let raw = server.requests().remove(0).raw;
            let before = shown_body(api, &server, &request, stream).to_string();
            assert_eq!(String::from_utf8(raw).unwrap(), before, "{api:?} stream={stream}");
        }
    }
}

/// The bytes of the image in the result of call `call_id` of `body`, wherever `api`'s
/// shape puts it (as asserted above): after the `tool` message for Chat Completions, in
/// the `function_call_output` for Responses, in the `tool_result` for Anthropic, in the
/// function response's parts for Gemini 3.
#[cfg_attr(not(feature = "mcp"), allow(dead_code, reason = "used by agent_mcp.rs"))]
pub(crate) fn result_image(api: Api, body: &Value, call_id: &str) -> Vec<u8> {
    let items = |key: &str| body[key].as_array().cloned().unwrap_or_default();
    match api {
        Api::Compatible => {
            let messages = items("messages");
            let at = messages
                .iter()
                .position(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
                .expect("the tool message");
            let user = &messages[at + 1];
            let image = user["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["type"] == "image_url")
                .expect("an image_url");
            data_url(&image["image_url"]["url"], "image/png")
        }
        Api::Responses => {
            let output = items("input")
                .into_iter()
                .find(|i| i["type"] == "function_call_output" && i["call_id"] == call_id)
                .expect("the output");
            let image = output["output"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["type"] == "input_image")
                .cloned()
                .expect("an input_image");
            data_url(&image["image_url"], "image/png")
        }
        Api::Anthropic => {
            let result = items("messages")
                .into_iter()
                .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == call_id)
                .expect("the tool_result");
            let image = result["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["type"] == "image")
                .cloned()
                .expect("an image block");
            decode(&image["source"]["data"])
        }
        Api::Gemini(_) => {
            let response = items("contents")
                .into_iter()
                .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
                .find_map(|p| p.get("functionResponse").cloned())
                .expect("a functionResponse");
            decode(&response["parts"][0]["inlineData"]["data"])
        }
    }
}

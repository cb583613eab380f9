//! The stream's events: a Responses stream (or a whole answer, item by item) assembled
//! into events and a response.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

use super::PROVIDER;
use super::response::{
    Head, Item, Kind, Part, WireEvent, WireResponse, finish_of, reasoning_of, reported_error,
};
use crate::model::http::{self, Decoder, Step};
use crate::model::sse::SseEvent;
use crate::model::{FinishReason, ModelError, ModelEvent, ModelResponse, Reasoning, Usage};
use harnessx_core::ToolCall;

/// A function call being assembled.
#[derive(Debug, Default)]
struct PartialCall {
    /// The `output_index` of its item.
    output_index: u64,
    id: String,
    name: String,
    arguments: String,
    /// Its item is done: the arguments are whole.
    done: bool,
}

/// Assembles a Responses stream.
#[derive(Debug, Default)]
pub(super) struct ResponsesDecoder {
    content: String,
    /// The output indexes of the message items that streamed text deltas.
    streamed_text: Vec<u64>,
    calls: Vec<PartialCall>,
    reasoning: Vec<Reasoning>,
    refused: bool,
    finish: Option<FinishReason>,
    usage: Usage,
}

impl ResponsesDecoder {
    fn text(&mut self, output_index: Option<u64>, text: &str, out: &mut Vec<ModelEvent>) {
        if let Some(index) = output_index
            && !self.streamed_text.contains(&index)
        {
            self.streamed_text.push(index);
        }
        if !text.is_empty() {
            self.content.push_str(text);
            out.push(ModelEvent::TextDelta(text.to_owned()));
        }
    }

    /// The position of the call of item `output_index`, started (with its start event)
    /// if it is new.
    fn call(&mut self, output_index: u64, id: &str, name: &str, out: &mut Vec<ModelEvent>) -> usize {
        if let Some(position) = self.calls.iter().position(|c| c.output_index == output_index) {
            return position;
        }
        self.calls.push(PartialCall {
            output_index,
            id: id.to_owned(),
            name: name.to_owned(),
            ..PartialCall::default()
        });
        let index = self.calls.len() - 1;
        out.push(ModelEvent::ToolCallStart { index, id: id.to_owned(), name: name.to_owned() });
        index
    }

    fn arguments(&mut self, position: usize, piece: &str, out: &mut Vec<ModelEvent>) {
        if !piece.is_empty() {
            self.calls[position].arguments.push_str(piece);
            out.push(ModelEvent::ToolCallDelta { index: position, delta: piece.to_owned() });
        }
    }

    /// The whole arguments of a call (`.done` events): used when no delta came.
    fn whole_arguments(&mut self, position: usize, arguments: &str, out: &mut Vec<ModelEvent>) {
        if self.calls[position].arguments.is_empty() {
            self.arguments(position, arguments, out);
        }
        self.calls[position].done = true;
    }

    fn item_added(
        &mut self,
        output_index: u64,
        item: &Value,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        if let Item::FunctionCall { call_id, name, arguments } = Item::of(item)? {
            let position = self.call(output_index, &call_id, &name, out);
            self.arguments(position, &arguments, out);
        }
        Ok(())
    }

    fn item_done(
        &mut self,
        output_index: u64,
        item: Value,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        match Item::of(&item)? {
            Item::Message { content } if !self.streamed_text.contains(&output_index) => {
                for part in content {
                    match part {
                        Part::OutputText { text } => self.text(Some(output_index), &text, out),
                        Part::Refusal { refusal } => {
                            self.refused = true;
                            self.text(Some(output_index), &refusal, out);
                        }
                        Part::Other => {}
                    }
                }
            }
            Item::FunctionCall { call_id, name, arguments } => {
                let position = self.call(output_index, &call_id, &name, out);
                self.whole_arguments(position, &arguments, out);
            }
            Item::Reasoning { summary } => self.reasoning.push(reasoning_of(&summary, item)),
            Item::Message { .. } | Item::Other => {}
        }
        Ok(())
    }

    fn ended(&mut self, response: &WireResponse<IgnoredAny>) {
        if let Some(usage) = &response.usage {
            self.usage = usage.usage();
        }
        let finish = finish_of(
            response.status.as_deref(),
            response.incomplete_details.as_ref(),
            !self.calls.is_empty(),
        );
        self.finish = Some(match finish {
            FinishReason::Stop if self.refused => FinishReason::ContentFilter,
            other => other,
        });
    }
}

/// What an event of a known type lacked.
fn missing(kind: Kind, field: &str) -> ModelError {
    ModelError::Protocol(format!("a `{kind:?}` event of the {} has no `{field}`", PROVIDER.name))
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<Step, ModelError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Step::More);
        }
        let wire: WireEvent = match serde_json::from_str(data) {
            Ok(wire) => wire,
            // An event of a type this adapter skips need not have the shape it expects.
            Err(e) => match serde_json::from_str::<Head>(data) {
                Ok(Head { kind: Some(Kind::Other) }) => return Ok(Step::More),
                _ => {
                    return Err(ModelError::Protocol(format!(
                        "a stream event of the {} is not as documented ({e}): {}",
                        PROVIDER.name,
                        http::truncate(data, 200)
                    )));
                }
            },
        };
        let kind = match wire.kind {
            Some(kind) => kind,
            // No type at all but an error: a gateway's error in the stream.
            None if wire.error.as_ref().is_some_and(|e| !e.is_null()) => Kind::Error,
            None => Kind::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(
                &event.event,
            ))
            .unwrap_or(Kind::Other),
        };
        let index = || wire.output_index.ok_or_else(|| missing(kind, "output_index"));
        match kind {
            Kind::TextDelta | Kind::RefusalDelta => {
                self.refused |= kind == Kind::RefusalDelta;
                self.text(wire.output_index, wire.delta.as_deref().unwrap_or_default(), out);
            }
            // The parts of a summary are joined by a blank line, streamed or not.
            Kind::ReasoningPartAdded if wire.summary_index.is_some_and(|i| i > 0) => {
                out.push(ModelEvent::ReasoningDelta("\n\n".into()));
            }
            Kind::ReasoningPartAdded => {}
            Kind::ReasoningDelta => {
                if let Some(delta) = wire.delta.filter(|d| !d.is_empty()) {
                    out.push(ModelEvent::ReasoningDelta(delta));
                }
            }
            Kind::ItemAdded => {
                let item = wire.item.as_ref().ok_or_else(|| missing(kind, "item"))?;
                self.item_added(index()?, item, out)?;
            }
            Kind::ItemDone => {
                let output_index = index()?;
                self.item_done(output_index, wire.item.ok_or_else(|| missing(kind, "item"))?, out)?;
            }
            Kind::ArgumentsDelta | Kind::ArgumentsDone => {
                let output_index = index()?;
                let Some(position) = self.calls.iter().position(|c| c.output_index == output_index) else {
                    return Err(ModelError::Protocol(format!(
                        "the {} sent arguments for output item {output_index}, which is not a function call it started",
                        PROVIDER.name
                    )));
                };
                match kind {
                    Kind::ArgumentsDelta => {
                        self.arguments(position, wire.delta.as_deref().unwrap_or_default(), out)
                    }
                    _ => self.whole_arguments(position, wire.arguments.as_deref().unwrap_or_default(), out),
                }
            }
            Kind::Completed | Kind::Incomplete => {
                let response = wire.response.ok_or_else(|| missing(kind, "response"))?;
                self.ended(&response);
                return Ok(Step::Complete);
            }
            Kind::Failed => {
                let error = wire.response.and_then(|r| r.error).filter(|e| !e.is_null());
                return Err(match error {
                    Some(error) => reported_error(&error),
                    None => ModelError::Protocol(format!(
                        "the {} failed the response without saying why",
                        PROVIDER.name
                    )),
                });
            }
            Kind::Error => {
                let error = match wire.error.filter(|e| !e.is_null()) {
                    Some(error) => error,
                    None => json!({"code": wire.code, "message": wire.message, "param": wire.param}),
                };
                return Err(reported_error(&error));
            }
            Kind::Other => {}
        }
        Ok(Step::More)
    }

    fn finish(self, complete: bool) -> Result<ModelResponse, ModelError> {
        if !complete && self.calls.is_empty() {
            return Err(ModelError::Transport(
                "the response stream ended before the answer was complete".into(),
            ));
        }
        let finish = match self.finish {
            Some(reason) => reason,
            None if complete => FinishReason::Stop,
            None => FinishReason::Other("incomplete".into()),
        };
        let tool_calls = self
            .calls
            .into_iter()
            .map(|c| {
                // Cut off before any argument text: nothing must not read as `{}`.
                let arguments = if !c.done && c.arguments.is_empty() {
                    http::CUT_OFF_EMPTY_ARGUMENTS.to_owned()
                } else {
                    c.arguments
                };
                ToolCall::new(c.id, c.name, arguments)
            })
            .collect();
        Ok(ModelResponse {
            content: self.content,
            tool_calls,
            finish_reason: finish,
            usage: self.usage,
            reasoning: self.reasoning,
            model: None,
        })
    }

    fn parse_full(&self, body: &Value) -> Result<ModelResponse, ModelError> {
        let response = WireResponse::<Vec<Value>>::deserialize(body).map_err(|e| {
            ModelError::Protocol(format!(
                "the answer of the {} is not a response ({e}): {}",
                PROVIDER.name,
                http::truncate(&body.to_string(), 200)
            ))
        })?;
        if response.status.as_deref() == Some("failed") {
            return Err(match response.error.as_ref().filter(|e| !e.is_null()) {
                Some(error) => reported_error(error),
                None => ModelError::Protocol(format!(
                    "the {} failed the response without saying why",
                    PROVIDER.name
                )),
            });
        }
        let mut decoder = Self::default();
        let mut out = Vec::new();
        for (output_index, item) in response.output.iter().enumerate() {
            decoder.item_done(output_index as u64, item.clone(), &mut out)?;
        }
        decoder.ended(&WireResponse {
            status: response.status,
            usage: response.usage,
            incomplete_details: response.incomplete_details,
            error: None,
            output: IgnoredAny,
        });
        decoder.finish(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_events_are_skipped_and_known_ones_of_the_wrong_shape_refused() {
        let mut d = ResponsesDecoder::default();
        let mut out = Vec::new();
        let event = |data: &str| SseEvent { event: String::new(), data: data.into(), id: None };
        for skipped in [
            r#"{"type":"response.created","response":{"id":"r"}}"#,
            r#"{"type":"response.future_thing","delta":{"an":"object"},"output_index":"x"}"#,
            r#"{"type":"response.output_text.annotation.added","annotation":{}}"#,
        ] {
            assert_eq!(d.event(event(skipped), &mut out).unwrap(), Step::More, "{skipped}");
        }
        for bad in [
            r#"{"type":"response.output_text.delta","delta":7}"#,
            r#"{"type":"response.output_item.added","output_index":0}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":3,"delta":"{"}"#,
            r#"{"type":"response.completed"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","name":5}}"#,
            "{not json",
        ] {
            let e = d.event(event(bad), &mut out).unwrap_err();
            assert!(matches!(&e, ModelError::Protocol(m) if m.contains("Responses API")), "{bad}: {e:?}");
        }
        assert!(out.is_empty());
    }

    fn feed(d: &mut ResponsesDecoder, events: &[Value]) -> Result<Vec<ModelEvent>, ModelError> {
        let mut out = Vec::new();
        for e in events {
            d.event(SseEvent { event: String::new(), data: e.to_string(), id: None }, &mut out)?;
        }
        Ok(out)
    }

    #[test]
    fn summary_parts_stream_and_join_with_a_blank_line() {
        let mut d = ResponsesDecoder::default();
        let item = json!({"id": "rs", "type": "reasoning", "encrypted_content": "e",
            "summary": [{"type": "summary_text", "text": "One."}, {"type": "summary_text", "text": "Two."}]});
        let out = feed(&mut d, &[
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "One."}),
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 1}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": "Two."}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ])
        .unwrap();
        let streamed: String = out
            .iter()
            .map(|e| match e {
                ModelEvent::ReasoningDelta(t) => t.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        let response = d.finish(true).unwrap();
        assert_eq!(streamed, "One.\n\nTwo.");
        assert_eq!(response.reasoning[0].text, streamed);
    }

    #[test]
    fn an_untyped_error_in_the_stream_is_an_error() {
        let mut d = ResponsesDecoder::default();
        let e = feed(&mut d, &[json!({"error": {"message": "upstream timed out", "type": "server_error"}})])
            .unwrap_err();
        assert!(
            matches!(&e, ModelError::Http { status: 500, message } if message.contains("upstream timed out")),
            "{e:?}"
        );
    }
}

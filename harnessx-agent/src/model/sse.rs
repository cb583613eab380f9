//! An incremental parser for server-sent events (the `text/event-stream` format both
//! providers stream in).
//!
//! Bytes go in as they arrive, split anywhere (inside a line, a `\r\n` pair or a UTF-8
//! character); complete events come out. It follows the WHATWG rules: lines end in `\n`,
//! `\r\n` or `\r`; a blank line ends an event; `:` starts a comment; `data:` lines join
//! with `\n`; one space after the colon is dropped. Unlike a browser it also hands out an
//! event left unterminated when the stream ends ([`SseParser::finish`]), because some
//! recorded provider streams end that way.
//!
//! ```
//! use harnessx_agent::model::sse::SseParser;
//!
//! let mut parser = SseParser::new();
//! assert!(parser.feed(b"event: ping\r\nda").is_empty());
//! let events = parser.feed(b"ta: {\"a\":1}\r\n\r\n: a comment\n\n");
//! assert_eq!(events.len(), 1);
//! assert_eq!(events[0].event, "ping");
//! assert_eq!(events[0].data, "{\"a\":1}");
//! ```

/// One event: its type (the `event:` field, empty when absent) and its data.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, or empty (the spec's default type `message`).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last `id:` field seen, if any.
    pub id: Option<String>,
}

/// An incremental server-sent-events parser. See the [module docs](self).
#[derive(Debug, Default)]
pub struct SseParser {
    /// The bytes of the current, unfinished line.
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` starting the next one belongs to it.
    skip_lf: bool,
    /// Whether the first line was seen (a leading BOM is dropped).
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    id: Option<String>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes and returns the events they complete, in order.
    pub fn feed(&mut self, mut chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if self.skip_lf && !chunk.is_empty() {
            self.skip_lf = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        while let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&chunk[..end]);
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut out);
            self.line = line;
            self.line.clear();
            if chunk[end] == b'\r' {
                match chunk.get(end + 1) {
                    Some(b'\n') => chunk = &chunk[end + 2..],
                    Some(_) => chunk = &chunk[end + 1..],
                    None => {
                        self.skip_lf = true;
                        chunk = &[];
                    }
                }
            } else {
                chunk = &chunk[end + 1..];
            }
        }
        self.line.extend_from_slice(chunk);
        out
    }

    /// The stream ended: returns the event still open, if it has data (an unterminated
    /// last line counts).
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut out);
        }
        self.skip_lf = false;
        self.dispatch(&mut out);
        out.pop()
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        let mut line = line;
        if !self.started {
            self.started = true;
            line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"event" => self.event = value.into_owned(),
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"id" if !value.contains('\0') => self.id = Some(value.into_owned()),
            // `retry` and unknown fields are ignored, as the spec says.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        out.push(SseEvent { event, data: std::mem::take(&mut self.data), id: self.id.clone() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], chunk: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for piece in input.chunks(chunk.max(1)) {
            out.extend(parser.feed(piece));
        }
        out.extend(parser.finish());
        out
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent { event: event.into(), data: data.into(), id: None }
    }

    #[test]
    fn every_split_gives_the_same_events() {
        let input = "\u{feff}: hi\r\nevent: a\r\ndata: x\r\ndata:y\r\n\r\ndata: é€\n\nevent: b\rdata: z\r\rdata: [DONE]\n\n";
        let want = vec![ev("a", "x\ny"), ev("", "é€"), ev("b", "z"), ev("", "[DONE]")];
        for chunk in 1..input.len() + 1 {
            assert_eq!(all(input.as_bytes(), chunk), want, "chunk size {chunk}");
        }
    }

    #[test]
    fn unterminated_last_event_is_kept() {
        assert_eq!(
            all(b"data: {\"type\":\"message_stop\" }", 3),
            vec![ev("", "{\"type\":\"message_stop\" }")]
        );
        assert_eq!(all(b"data: a\n", 3), vec![ev("", "a")]);
    }

    #[test]
    fn events_without_data_and_comments_are_dropped() {
        assert_eq!(all(b"event: ping\n\n: keep-alive\n\n\n\n", 2), vec![]);
    }

    #[test]
    fn field_without_colon_and_empty_data() {
        assert_eq!(all(b"data\n\ndata:\ndata\n\n", 1), vec![ev("", ""), ev("", "\n")]);
    }

    #[test]
    fn id_is_remembered_and_retry_ignored() {
        let got = all(b"id: 7\nretry: 10\ndata: a\n\ndata: b\n\n", 4);
        assert_eq!(got[0].id.as_deref(), Some("7"));
        assert_eq!(got[1].id.as_deref(), Some("7"));
    }
}

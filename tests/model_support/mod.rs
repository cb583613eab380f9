//! Shared by the model adapter tests: a loopback HTTP server that replays recorded
//! provider bodies (whole or re-split into small chunks) and records each request, plus
//! fixture loading and stream collection.
#![allow(dead_code, unreachable_pub, reason = "each test crate uses a different part of this module")]

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use harnessx::model::{ModelError, ModelEvent, ModelResponse};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The splits every recorded stream is replayed with: whole, and re-split into 1, 7 and
/// 64-byte pieces (each its own HTTP chunk, flushed).
pub const SPLITS: [Option<usize>; 4] = [None, Some(1), Some(7), Some(64)];

/// A recorded body from `tests/fixtures/transcripts/`.
pub fn fixture(path: &str) -> Vec<u8> {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts").join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The reference accumulation of a recorded stream (`expected_accumulated_DERIVED.json`).
pub fn expected(path: &str) -> Value {
    let all: Value = serde_json::from_slice(&fixture("expected_accumulated_DERIVED.json")).unwrap();
    all["results"][path].clone()
}

/// One canned HTTP answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Send the body in pieces of this many bytes (chunked transfer encoding).
    pub split: Option<usize>,
}

impl Reply {
    /// An event stream.
    pub fn sse(body: Vec<u8>, split: Option<usize>) -> Self {
        Self { status: 200, content_type: "text/event-stream", body, split }
    }

    /// A JSON body.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self { status, content_type: "application/json", body: body.into(), split: None }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// The body exactly as received.
    pub raw: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A loopback server answering requests with `replies` in order (then 500s).
pub struct Server {
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let log = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let log = log.clone();
                let replies = replies.clone();
                tokio::spawn(async move {
                    let _ = serve(socket, log, replies).await;
                });
            }
        });
        Self { url, requests, task }
    }

    /// The requests so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    log: Arc<Mutex<Vec<Recorded>>>,
    replies: Arc<Mutex<VecDeque<Reply>>>,
) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (method, path) =
        (first.next().unwrap_or_default().to_owned(), first.next().unwrap_or_default().to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize =
        headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let raw = buf[head_end..].to_vec();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    log.lock().unwrap().push(Recorded { method, path, headers, body, raw });
    let reply = replies
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| Reply::json(500, "{\"error\":\"no more replies\"}"));
    let mut head = format!(
        "HTTP/1.1 {} X\r\ncontent-type: {}\r\nconnection: close\r\n",
        reply.status, reply.content_type
    );
    match reply.split {
        None => {
            head.push_str(&format!("content-length: {}\r\n\r\n", reply.body.len()));
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(&reply.body).await?;
        }
        Some(size) => {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
            socket.write_all(head.as_bytes()).await?;
            for piece in reply.body.chunks(size.max(1)) {
                socket.write_all(format!("{:x}\r\n", piece.len()).as_bytes()).await?;
                socket.write_all(piece).await?;
                socket.write_all(b"\r\n").await?;
                socket.flush().await?;
            }
            socket.write_all(b"0\r\n\r\n").await?;
        }
    }
    socket.flush().await?;
    socket.shutdown().await
}

/// A URL where nothing listens (connections are refused).
pub async fn dead_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

/// Every event of a stream, and the outcome: the `Done` response, or the error.
pub async fn collect(
    mut stream: BoxStream<'_, Result<ModelEvent, ModelError>>,
) -> (Vec<ModelEvent>, Result<ModelResponse, ModelError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::Done(response)) => {
                assert!(stream.next().await.is_none(), "events after Done");
                return (events, Ok(response));
            }
            Ok(event) => events.push(event),
            Err(e) => {
                assert!(stream.next().await.is_none(), "events after an error");
                return (events, Err(e));
            }
        }
    }
    panic!("the stream ended without Done or an error; events: {events:?}")
}

/// Checks the events agree with the response: the text deltas make up its text, and per
/// call, one start (in call order) and deltas that make up its arguments.
pub fn assert_events_match(events: &[ModelEvent], response: &ModelResponse) {
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, response.content);
    let starts: Vec<(usize, &str, &str)> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCallStart { index, id, name } => Some((*index, id.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    let want: Vec<(usize, &str, &str)> =
        response.tool_calls.iter().enumerate().map(|(i, c)| (i, c.id.as_str(), c.name.as_str())).collect();
    assert_eq!(starts, want);
    for (i, call) in response.tool_calls.iter().enumerate() {
        let args: String = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCallDelta { index, delta } if *index == i => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        // A call with no argument text at all reads as `{}`.
        if args.is_empty() && call.arguments == "{}" {
            continue;
        }
        assert_eq!(args, call.arguments, "arguments of call {i}");
    }
}

//! A loopback HTTP server that replays canned provider replies (whole, or re-split into
//! small chunks) and records each request.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// The splits every recorded stream is replayed with: whole, and re-split into 1, 7 and
/// 64-byte pieces (each its own HTTP chunk, flushed).
pub const SPLITS: [Option<usize>; 4] = [None, Some(1), Some(7), Some(64)];

/// One canned HTTP answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The `content-type` header.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
    /// Send the body in pieces of this many bytes (chunked transfer encoding).
    pub split: Option<usize>,
    /// Other headers (name, value).
    pub headers: Vec<(String, String)>,
}

impl Reply {
    /// An event stream (text), sent whole.
    pub fn event_stream(body: impl Into<String>) -> Self {
        Self::sse(body.into().into_bytes(), None)
    }

    /// An event stream.
    pub fn sse(body: Vec<u8>, split: Option<usize>) -> Self {
        Self { status: 200, content_type: "text/event-stream", body, split, headers: Vec::new() }
    }

    /// A JSON body.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self { status, content_type: "application/json", body: body.into(), split: None, headers: Vec::new() }
    }

    /// An OpenAI-style chat completion of one choice, `message`, finished with `stop`.
    pub fn chat(message: Value) -> Self {
        let body =
            serde_json::json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]});
        Self::json(200, body.to_string())
    }

    /// The reply with header `name: value` too.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request path.
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`null` if it is not JSON).
    pub body: Value,
    /// The body exactly as received.
    pub raw: Vec<u8>,
}

impl Recorded {
    /// A `POST` of a JSON body, as the server would record it.
    pub fn post(path: &str, body: Value) -> Self {
        let raw = body.to_string().into_bytes();
        Self {
            method: "POST".into(),
            path: path.into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body,
            raw,
        }
    }

    /// The value of a header (lowercase `name`).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A loopback server answering requests with `replies` in order (then 500s), or each
/// request by a function of it ([`Server::respond`]). It runs on a thread of its own
/// (with its own runtime), so sync and async tests use it alike; it stops when dropped.
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A handler whose answer may take its time.
type LaterFn = dyn Fn(&Recorded) -> futures_util::future::BoxFuture<'static, Reply> + Send + Sync;

/// Where a server's answers come from.
#[derive(Clone)]
enum Answers {
    /// Canned replies, one per request, in order.
    Queue(Arc<Mutex<VecDeque<Reply>>>),
    /// A function of each request.
    Handler(Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>),
    /// A function of each request that may take its time (a model that hangs).
    Later(Arc<LaterFn>),
}

impl Answers {
    async fn next(&self, request: &Recorded) -> Reply {
        match self {
            Self::Later(handler) => handler(request).await,
            Self::Queue(replies) => replies
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop_front()
                .unwrap_or_else(|| Reply::json(500, "{\"error\":\"no more replies\"}")),
            Self::Handler(handler) => handler(request),
        }
    }
}

impl Server {
    /// Starts a server answering with `replies`, one per request, in order.
    pub fn start(replies: Vec<Reply>) -> Self {
        Self::with_answers(Answers::Queue(Arc::new(Mutex::new(VecDeque::from(replies)))))
    }

    /// Starts a server answering each request with `handler(request)`: a server that
    /// behaves by what it is sent (see [`local`](crate::local)).
    pub fn respond(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        Self::with_answers(Answers::Handler(Arc::new(handler)))
    }

    /// Starts a server answering each request with what `handler(request)` resolves to,
    /// whenever it does: a model that hangs until the test has killed its client.
    pub fn respond_later(
        handler: impl Fn(&Recorded) -> futures_util::future::BoxFuture<'static, Reply> + Send + Sync + 'static,
    ) -> Self {
        Self::with_answers(Answers::Later(Arc::new(handler)))
    }

    fn with_answers(answers: Answers) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
        listener.set_nonblocking(true).expect("a non-blocking listener");
        let url = format!("http://{}", listener.local_addr().expect("a local address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        let (stop, stopped) = oneshot::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the test server");
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).expect("a tokio listener");
                let accept = async {
                    while let Ok((socket, _)) = listener.accept().await {
                        let log = log.clone();
                        let answers = answers.clone();
                        tokio::spawn(async move {
                            let _ = serve(socket, log, answers).await;
                        });
                    }
                };
                tokio::select! {
                    () = accept => {}
                    _ = stopped => {}
                }
            });
        });
        Self { url, requests, stop: Some(stop) }
    }

    /// The requests so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The JSON bodies of the requests so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests().into_iter().map(|r| r.body).collect()
    }
}

async fn serve(
    mut socket: TcpStream,
    log: Arc<Mutex<Vec<Recorded>>>,
    answers: Answers,
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
    let request = Recorded { method, path, headers, body, raw };
    // Recorded before it is answered: a test may wait for a request it never answers.
    log.lock().unwrap_or_else(|e| e.into_inner()).push(request.clone());
    let reply = answers.next(&request).await;
    let mut head = format!(
        "HTTP/1.1 {} X\r\ncontent-type: {}\r\nconnection: close\r\n",
        reply.status, reply.content_type
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
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
pub fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("a local address"));
    drop(listener);
    url
}

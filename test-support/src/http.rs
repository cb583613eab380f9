//! A minimal HTTP/1.1 client for loopback servers in tests: one request per connection
//! (`Connection: close`), headers of the test's choosing, the whole answer read.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// An answer: its status, its headers (names lowercased) and its body (chunked bodies
/// decoded).
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body as text.
    pub body: String,
}

impl Answer {
    /// The body as JSON (`null` when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// One request to a loopback `url`, with `headers` and, when given, a body (sent as
/// `application/json`); waits at most `timeout` between reads: a stream that goes on past
/// it gives what came until then.
pub fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
    timeout: Duration,
) -> Result<Answer, String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| format!("not an http URL: {url}"))?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let mut stream = TcpStream::connect(host).map_err(|e| format!("connecting to {host}: {e}"))?;
    stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
    } else {
        head.push_str("Content-Length: 0\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).map_err(|e| format!("sending to {host}: {e}"))?;
    if let Some(body) = body {
        // A server may answer (413) before reading a large body, and close.
        let _ = stream.write_all(body);
    }
    let mut raw = Vec::new();
    match stream.read_to_end(&mut raw) {
        Ok(_) => {}
        // A stream that goes on past the timeout: what came until then.
        Err(e)
            if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
                && !raw.is_empty() => {}
        Err(e) => return Err(format!("reading from {host}: {e}")),
    }
    let text = String::from_utf8_lossy(&raw);
    let (head, payload) = text.split_once("\r\n\r\n").ok_or_else(|| format!("no HTTP answer from {host}"))?;
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("a bad status line from {host}: {head}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(payload) } else { payload.to_owned() };
    Ok(Answer { status, headers, body })
}

/// A chunked body's content.
pub(crate) fn dechunk(mut payload: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = payload.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { break };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        payload = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// The events of a `text/event-stream` body: each `(id, data)`, `data` parsed as JSON.
pub fn sse_events(body: &str) -> Vec<(Option<u64>, serde_json::Value)> {
    let mut events = Vec::new();
    for block in body.split("\n\n") {
        let mut id = None;
        let mut data = String::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
        if !data.is_empty() {
            events.push((id, serde_json::from_str(&data).unwrap_or(serde_json::Value::Null)));
        }
    }
    events
}

/// `bytes` in standard base64 with padding (what a JSON body carries a file as).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char
            } else {
                '='
            });
        }
    }
    out
}

//! A 5 MB image from disk to the request body: read, attached to a prompt, sent to a
//! loopback OpenAI-compatible server (which reads the body and throws it away) by
//! `OpenAiModel::complete`. The time of the whole path, and, before criterion runs, the
//! peak of the process's resident memory above where it was (Linux: the high-water mark
//! `VmHWM`, reset through `/proc/self/clear_refs`): the file's bytes (5 MB, shared from
//! then on) and one copy of their base64 in the body (6.7 MB), no second copy. The check
//! fails the bench when the peak passes bytes + base64 + 2 MB (a second copy of the
//! base64 would be 6.7 MB more).
//!
//! `cargo bench -p harnessx-agent --bench media_body`

use criterion::{Criterion, criterion_group};
use harnessx_agent::model::{Message, Model, ModelRequest, OpenAiModel};
use harnessx_core::Part;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A field of `/proc/self/status` in KiB (`VmRSS`, `VmHWM`).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

const IMAGE_BYTES: usize = 5_000_000;

/// A loopback server that reads each request's body into a small buffer, over and over
/// (throwing it away), and answers with a short completion.
async fn sink() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut head = Vec::new();
                let (length, mut read) = loop {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    head.extend_from_slice(&buf[..n]);
                    if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                        let text = String::from_utf8_lossy(&head[..end]).to_ascii_lowercase();
                        let length = text
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (length, head.len() - end - 4);
                    }
                };
                while read < length {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    read += n;
                }
                let body = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"a chart"},"finish_reason":"stop"}]}"#;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    url
}

/// Reads the image, attaches it and sends the request.
async fn send(model: &OpenAiModel, path: &std::path::Path) {
    let bytes = std::fs::read(path).unwrap();
    let request = ModelRequest {
        messages: vec![Message::user_with_parts(
            "What is in this picture?",
            vec![Part::image("image/png", bytes)],
        )],
        ..ModelRequest::default()
    };
    let response = model.complete(&request).await.unwrap();
    assert_eq!(response.content, "a chart");
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.png");
    let mut image = b"\x89PNG\r\n\x1a\n".to_vec();
    image.extend((0..IMAGE_BYTES - 8).map(|i| (i * 7919 % 251) as u8));
    std::fs::write(&path, &image).unwrap();
    drop(image);
    let url = runtime.block_on(sink());
    let model = OpenAiModel::new("gpt-4o").base_url(url).api_key("sk-bench");
    // The client's first request, with a small image: what a first request sets up
    // (threads' stacks, the client's state) is not counted below.
    let small = dir.path().join("small.png");
    std::fs::write(&small, b"\x89PNG\r\n\x1a\n").unwrap();
    runtime.block_on(send(&model, &small));
    // The peak of the first large send above where it started: before it, no large buffer
    // was freed and kept by the allocator, so the resident memory it adds is what it
    // holds (a process that sent one already reuses freed pages and shows less).
    std::fs::write("/proc/self/clear_refs", "5").expect("resetting the high-water mark (Linux)");
    let before = status_kib("VmRSS");
    runtime.block_on(send(&model, &path));
    let peak = (status_kib("VmHWM").saturating_sub(before) * 1024) as usize;
    let base64 = IMAGE_BYTES.div_ceil(3) * 4;
    eprintln!(
        "media_body: peak resident memory above the start {:.2} MB for a {:.2} MB image ({:.2} MB of base64): {:.2} MB besides the bytes and one base64",
        peak as f64 / 1e6,
        IMAGE_BYTES as f64 / 1e6,
        base64 as f64 / 1e6,
        (peak as f64 - (IMAGE_BYTES + base64) as f64) / 1e6,
    );
    assert!(
        peak < IMAGE_BYTES + base64 + 2_000_000,
        "more than one copy of the base64: {peak} bytes at the peak"
    );

    let mut group = c.benchmark_group("media_body");
    group.sample_size(20);
    group.bench_function("5MB_png_disk_to_body", |b| b.to_async(&runtime).iter(|| send(&model, &path)));
    group.finish();
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}

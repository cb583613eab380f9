//! HTML to Markdown (`fetch_url`'s conversion) on a ~1 MiB page, generated the same way on
//! every run. The page is also written to `$HX_BENCH_PAGE` (default
//! `/tmp/hx-bench-page.html`) so that `bench/markdownify_ref.py` times Python's
//! `markdownify` on the very same bytes. See docs/performance.md, "Web pages".
#![allow(missing_docs, reason = "criterion's macros generate undocumented items")]

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use harnessx_builtin::web::html_to_markdown;

const WORDS: [&str; 16] = [
    "agent", "tool", "registry", "schema", "sandbox", "timeout", "model", "result", "page", "link", "stream",
    "budget", "policy", "replay", "bundle", "limit",
];

/// A documentation-like page: a navigation bar, then articles with headings, paragraphs
/// with inline markup and links, lists, a table, code, and the scripts and styles a real
/// page carries. Deterministic (a linear congruential generator), about 1 MiB.
pub fn page() -> String {
    let mut seed: u64 = 42;
    let mut next = move |n: usize| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((seed >> 33) as usize) % n
    };
    let mut html =
        String::from("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Bench page</title>");
    html.push_str("<style>body{font-family:sans-serif} .nav a{margin:0 4px} table td{padding:2px}</style>");
    html.push_str(
        "<script>window.analytics = {queue: []}; function track(e){analytics.queue.push(e)}</script>",
    );
    html.push_str("</head><body><nav class=\"nav\">");
    for i in 0..40 {
        let _ = write!(html, "<a href=\"/section/{i}\">Section {i}</a>");
    }
    html.push_str("</nav><main>");
    let mut article = 0;
    while html.len() < 1024 * 1024 {
        article += 1;
        let _ = write!(
            html,
            "<article id=\"a{article}\"><h2>Article {article}: the {} {}</h2>",
            WORDS[next(16)],
            WORDS[next(16)]
        );
        for _ in 0..4 {
            html.push_str("<p>");
            for w in 0..40 {
                let word = WORDS[next(16)];
                match next(12) {
                    0 => {
                        let _ = write!(html, "<a href=\"https://docs.example.com/{word}/{w}\">{word}</a> ");
                    }
                    1 => {
                        let _ = write!(html, "<strong>{word}</strong> ");
                    }
                    2 => {
                        let _ = write!(html, "<em>{word}</em> ");
                    }
                    3 => {
                        let _ = write!(html, "<code>{word}_{w}()</code> ");
                    }
                    _ => {
                        let _ = write!(html, "{word} ");
                    }
                }
            }
            html.push_str("</p>");
        }
        html.push_str("<ul>");
        for _ in 0..5 {
            let _ = write!(
                html,
                "<li>{} with <a href=\"#{}\">{}</a></li>",
                WORDS[next(16)],
                WORDS[next(16)],
                WORDS[next(16)]
            );
        }
        html.push_str("</ul><table><tr><th>name</th><th>value</th></tr>");
        for _ in 0..3 {
            let _ = write!(html, "<tr><td>{}</td><td>{}</td></tr>", WORDS[next(16)], next(1000));
        }
        html.push_str("</table><pre><code>fn main() {\n    println!(\"hello\");\n}\n</code></pre>");
        html.push_str("<script>track('article-view');</script></article>");
    }
    html.push_str("</main><footer><p>&copy; 2026 Example &amp; Co.</p></footer></body></html>");
    html
}

fn markdown(c: &mut Criterion) {
    let html = page();
    let path = std::env::var("HX_BENCH_PAGE").unwrap_or_else(|_| "/tmp/hx-bench-page.html".into());
    std::fs::write(&path, &html).expect("write the bench page");
    let md = html_to_markdown(&html);
    eprintln!("page: {} bytes of HTML -> {} bytes of Markdown (written to {path})", html.len(), md.len());
    let mut group = c.benchmark_group("web");
    group.sample_size(20);
    group.bench_function("html_to_markdown_1MiB", |b| b.iter(|| html_to_markdown(black_box(&html))));
    group.finish();
}

criterion_group!(benches, markdown);
criterion_main!(benches);

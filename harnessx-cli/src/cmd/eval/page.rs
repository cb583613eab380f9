//! `eval --report FILE.html`: one self-contained page (no script, no request: its
//! content security policy allows inline styles alone): the summary, a chart of tokens
//! and of cost per case (inline SVG), the table, and each case's transcripts. Every text
//! from a case or a run is escaped: a case named `<script>` shows that name.

use std::fmt::Write;

use super::Tally;

/// The most cases the charts show (the table and transcripts have them all).
const CHARTED: usize = 200;

/// One step of a run's transcript: `prompt`, `model` (its words), `call`, `result`,
/// `error` or `answer`.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    kind: &'static str,
    text: String,
}

impl Entry {
    /// An entry, its text cut to [`ENTRY_CHARS`](super::ENTRY_CHARS).
    pub(crate) fn new(kind: &'static str, text: &str) -> Self {
        let kept: String = text.chars().take(super::ENTRY_CHARS).collect();
        let text = if kept.len() < text.len() {
            let more = text.chars().count() - super::ENTRY_CHARS;
            format!("{kept}… ({more} more characters)")
        } else {
            kept
        };
        Self { kind, text }
    }
}

/// `text` for HTML text and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:64rem;padding:0 1rem;color:#1d232b}\
h1{font-size:1.3rem;word-break:break-all}.charts{display:flex;flex-wrap:wrap;gap:1.5rem}figure{margin:0}\
figcaption{font-weight:600;margin-bottom:.3rem}table{border-collapse:collapse;width:100%;margin:1.5rem 0}\
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #dde3ea;vertical-align:top}\
td.n{text-align:right;font-variant-numeric:tabular-nums}.pass .r{color:#137333}.fail .r{color:#b3261e;font-weight:600}\
details{border:1px solid #dde3ea;border-radius:6px;margin:.6rem 0;padding:.4rem .8rem}summary{cursor:pointer}\
ol{padding-left:1.2rem}li{margin:.4rem 0}.k{font-size:.75rem;text-transform:uppercase;color:#5f6b7a}\
pre{white-space:pre-wrap;word-break:break-word;margin:.1rem 0;background:#f5f7f9;padding:.4rem;border-radius:4px}\
li.error pre{background:#fce8e6}li.answer pre{background:#e6f4ea}";

/// The page for `tallies`, titled `title`.
pub(crate) fn html(title: &str, tallies: &[Tally]) -> String {
    let passed = tallies.iter().filter(|t| t.passed()).count();
    let mut page = String::new();
    let _ = write!(
        page,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{t}</title><style>{STYLE}</style></head>\n\
<body><h1>{t}</h1><p id=\"summary\">{passed} passed, {failed} failed</p>\n",
        t = escape(title),
        failed = tallies.len() - passed,
    );
    page.push_str("<div class=\"charts\">");
    let tokens: Vec<f64> = tallies.iter().map(|t| t.usage.total_tokens() as f64).collect();
    chart(&mut page, "tokens-chart", "Tokens per case", tallies, &tokens, |v| format!("{v:.0}"), "#3b6fd6");
    if tallies.iter().any(|t| t.usage.cost_usd.is_some()) {
        let cost: Vec<f64> = tallies.iter().map(|t| t.usage.cost_usd.unwrap_or(0.0)).collect();
        chart(
            &mut page,
            "cost-chart",
            "Cost per case (US dollars)",
            tallies,
            &cost,
            |v| format!("${v:.4}"),
            "#d9822b",
        );
    } else {
        page.push_str(
            "<figure id=\"cost-chart\"><figcaption>Cost per case</figcaption><p>Unknown: the model has no known price (give it with --price).</p></figure>",
        );
    }
    page.push_str("</div>\n<table id=\"cases\"><thead><tr><th>Case</th><th>Result</th><th>Turns</th><th>Tokens</th><th>Cost</th><th>Time</th><th>First failed expectation</th></tr></thead><tbody>\n");
    for (i, t) in tallies.iter().enumerate() {
        let result = if t.runs > 1 {
            format!("{}/{}", t.passed, t.runs)
        } else if t.passed() {
            "pass".into()
        } else {
            "fail".into()
        };
        let _ = writeln!(
            page,
            "<tr class=\"{class}\"><td><a href=\"#case-{i}\">{name}</a></td><td class=\"r\">{result}</td><td class=\"n\">{turns}</td><td class=\"n\">{tokens}</td><td class=\"n\">{cost}</td><td class=\"n\">{time:.1}s</td><td>{failed}</td></tr>",
            class = if t.passed() { "pass" } else { "fail" },
            name = escape(&t.name),
            turns = t.turns,
            tokens = t.usage.total_tokens(),
            cost = t.usage.cost_usd.map_or_else(|| "-".to_owned(), |c| format!("${c:.4}")),
            time = t.seconds,
            failed = escape(t.failed.as_deref().unwrap_or("")),
        );
    }
    page.push_str("</tbody></table>\n<section id=\"transcripts\">\n");
    for (i, t) in tallies.iter().enumerate() {
        let _ = write!(
            page,
            "<details id=\"case-{i}\"{open}><summary>{name}: {result}</summary>",
            open = if t.passed() { "" } else { " open" },
            name = escape(&t.name),
            result = if t.passed() { "pass" } else { "fail" },
        );
        if let Some((score, reason)) = &t.grade {
            let _ = write!(page, "<p class=\"grade\">Judge: {score} — {}</p>", escape(reason));
        }
        for (run, transcript) in t.transcripts.iter().enumerate() {
            if t.transcripts.len() > 1 {
                let _ = write!(page, "<p>Run {}</p>", run + 1);
            }
            page.push_str("<ol class=\"transcript\">");
            for entry in transcript {
                let _ = write!(
                    page,
                    "<li class=\"{k}\"><span class=\"k\">{k}</span><pre>{}</pre></li>",
                    escape(&entry.text),
                    k = entry.kind
                );
            }
            page.push_str("</ol>");
        }
        page.push_str("</details>\n");
    }
    page.push_str("</section></body></html>\n");
    page
}

/// A bar chart of `values` (one per case, the first [`CHARTED`]) as inline SVG.
fn chart(
    page: &mut String,
    id: &str,
    caption: &str,
    tallies: &[Tally],
    values: &[f64],
    label: impl Fn(f64) -> String,
    colour: &str,
) {
    const LABEL: f64 = 170.0;
    const BARS: f64 = 260.0;
    const ROW: f64 = 24.0;
    let shown = values.len().min(CHARTED);
    let max = values[..shown].iter().copied().fold(0.0_f64, f64::max);
    let height = ROW * shown as f64 + 8.0;
    let width = LABEL + BARS + 90.0;
    let _ = write!(
        page,
        "<figure id=\"{id}\"><figcaption>{caption}</figcaption>\
<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{caption}\">"
    );
    for (i, (tally, value)) in tallies.iter().zip(values).take(shown).enumerate() {
        let y = 4.0 + ROW * i as f64;
        let bar = if max > 0.0 { (value / max * BARS).max(1.0) } else { 1.0 };
        let name: String = tally.name.chars().take(24).collect();
        let _ = write!(
            page,
            "<text x=\"{tx}\" y=\"{ty}\" text-anchor=\"end\" font-size=\"12\">{name}</text>\
<rect class=\"bar\" x=\"{LABEL}\" y=\"{y}\" width=\"{bar:.1}\" height=\"{h}\" fill=\"{colour}\"><title>{full}: {value}</title></rect>\
<text x=\"{vx:.1}\" y=\"{ty}\" font-size=\"12\">{value}</text>",
            tx = LABEL - 6.0,
            ty = y + 13.0,
            name = escape(&name),
            h = ROW - 6.0,
            full = escape(&tally.name),
            value = escape(&label(*value)),
            vx = LABEL + bar + 4.0,
        );
    }
    page.push_str("</svg>");
    if values.len() > shown {
        let _ = write!(page, "<p>The first {CHARTED} of {} cases.</p>", values.len());
    }
    page.push_str("</figure>");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(name: &str, tokens: u64, passed: bool) -> Tally {
        let mut t = Tally { name: name.into(), runs: 1, passed: u32::from(passed), ..Tally::default() };
        t.usage.input_tokens = tokens;
        t.transcripts = vec![vec![Entry::new("prompt", "<b>hi</b>"), Entry::new("answer", "done & dusted")]];
        if !passed {
            t.failed = Some("output_contains: \"x\" is not in the answer".into());
        }
        t
    }

    #[test]
    fn every_text_of_a_case_is_escaped() {
        let hostile = "<img src=x onerror=alert(1)>\"'&";
        let page = html("eval <t>", &[tally(hostile, 10, false), tally("b", 0, true)]);
        assert!(!page.contains("<img"), "{page}");
        assert!(!page.contains("<b>hi"), "{page}");
        assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;"));
        assert!(page.contains("<title>eval &lt;t&gt;</title>"));
        assert!(page.contains("done &amp; dusted"));
        assert!(page.contains("1 passed, 1 failed"));
        // The bars: one per case; the largest spans the chart, a zero is still seen.
        assert_eq!(page.matches("<rect class=\"bar\"").count(), 2);
        assert!(page.contains("width=\"260.0\""), "{page}");
        assert!(page.contains("no known price"));
    }

    #[test]
    fn a_long_entry_is_cut_and_says_how_much() {
        let entry = Entry::new("result", &"é".repeat(super::super::ENTRY_CHARS + 5));
        assert!(entry.text.ends_with("… (5 more characters)"), "{}", &entry.text[entry.text.len() - 40..]);
        let many: Vec<Tally> = (0..CHARTED + 3).map(|i| tally(&format!("c{i}"), i as u64, true)).collect();
        let page = html("t", &many);
        assert_eq!(page.matches("<rect class=\"bar\"").count(), CHARTED);
        assert!(page.contains(&format!("The first {CHARTED} of {} cases.", CHARTED + 3)));
    }
}

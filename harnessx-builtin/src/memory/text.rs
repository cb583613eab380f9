//! Words out of text, for both stores: how a query from the model becomes an FTS5 query
//! that cannot be read as FTS5 syntax, and the light stemmer and BM25 scoring the
//! in-process store ranks with.
//!
//! Hand-written because the query is untrusted: FTS5 gives meaning to `"`, `*`, `^`, `:`,
//! `(`, `)`, `-`, `+`, `NEAR` and the bare words `AND`, `OR`, `NOT`. Rather than escape
//! each, the query is cut into words (runs of letters and digits) and every word is
//! written as a quoted string, so whatever the model sends, the store only ever sees
//! quoted words joined by `OR` (`"w1" OR "w2" ...`), or one quoted word.

/// The most words of a query that are searched; the rest are ignored (a pasted page
/// should not become a thousand-term query).
pub(super) const MAX_QUERY_WORDS: usize = 64;

/// The words of `text`: maximal runs of letters and digits, lowercased.
pub(super) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase)
}

/// Words a question is made of that say nothing about what it is after ("is the user
/// running on weekends" is about running and weekends). Dropped from queries, unless
/// the query has nothing else; memories keep them.
const STOPWORDS: [&str; 72] = [
    "a", "about", "am", "an", "and", "any", "anyone", "are", "as", "at", "be", "been", "by", "can", "could",
    "did", "do", "does", "for", "from", "get", "had", "has", "have", "he", "her", "his", "how", "i", "if",
    "in", "is", "it", "its", "me", "much", "my", "of", "on", "or", "our", "she", "should", "so", "that",
    "the", "their", "them", "there", "these", "they", "this", "those", "to", "was", "we", "were", "what",
    "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you", "your", "many", "often",
    "not",
];

/// The distinct words of a query worth searching for: stopwords dropped (unless that
/// leaves none), at most [`MAX_QUERY_WORDS`].
pub(super) fn query_words(query: &str) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for word in words(query) {
        if !all.contains(&word) {
            all.push(word);
        }
    }
    if all.iter().any(|w| !STOPWORDS.contains(&w.as_str())) {
        all.retain(|w| !STOPWORDS.contains(&w.as_str()));
    }
    all.truncate(MAX_QUERY_WORDS);
    all
}

/// The [`query_words`] of `query`, each written as an FTS5 string.
pub(super) fn fts_terms(query: &str) -> Vec<String> {
    // A word holds no `"` (only letters and digits), but double any anyway: that is
    // FTS5's escape inside a string, and keeps this correct if `words` ever changes.
    query_words(query).iter().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect()
}

/// The FTS5 query matching any of `terms` (ranking, not the operator, prefers memories
/// that match more of them).
pub(super) fn any_of(terms: &[String]) -> String {
    terms.join(" OR ")
}

/// An FTS5 query that matches every memory holding all of `terms` but at most
/// `missing`, and names each term once, so `bm25()` scores a match exactly as under
/// [`any_of`]. The terms are cut into groups of `missing + 1` (the last takes the
/// remainder) and the query asks for one term of each group: a memory that lacks at
/// most `missing` terms cannot lack a whole group. With no missing term it is all the
/// terms; with one group, [`any_of`].
pub(super) fn covering(terms: &[&String], missing: usize) -> String {
    let size = missing + 1;
    let groups = (terms.len() / size).max(1);
    let mut parts = Vec::with_capacity(groups);
    for g in 0..groups {
        let end = if g + 1 == groups { terms.len() } else { (g + 1) * size };
        let group: Vec<&str> = terms[g * size..end].iter().map(|t| t.as_str()).collect();
        parts.push(if group.len() == 1 { group[0].to_owned() } else { format!("({})", group.join(" OR ")) });
    }
    parts.join(" AND ")
}

/// The FTS5 query for `query`: its [`fts_terms`] joined by `OR`. `None` when the query
/// has no words.
#[cfg(test)]
pub(super) fn fts_query(query: &str) -> Option<String> {
    let terms = fts_terms(query);
    (!terms.is_empty()).then(|| any_of(&terms))
}

/// A light English stemmer: strips common inflections so that "running", "runs" and
/// "run", or "meetings" and "meeting", fall together. Not Porter's algorithm (SQLite's
/// store uses that); the in-process store only needs to agree with itself.
pub(super) fn stem(word: &str) -> String {
    let w = word.strip_suffix("'s").unwrap_or(word);
    let n = w.chars().count();
    if n <= 3 || !w.is_ascii() {
        return w.to_owned();
    }
    const RULES: [(&str, &str); 16] = [
        ("ational", "ate"),
        ("ization", "ize"),
        ("fulness", "ful"),
        ("ousness", "ous"),
        ("iveness", "ive"),
        ("ations", "ate"),
        ("ation", "ate"),
        ("ingly", ""),
        ("ings", ""),
        ("ing", ""),
        ("edly", ""),
        ("ies", "y"),
        ("ied", "y"),
        ("ed", ""),
        ("ly", ""),
        ("es", ""),
    ];
    for (suffix, with) in RULES {
        if let Some(base) = w.strip_suffix(suffix)
            && base.len() >= 3
            && base.bytes().any(|b| b"aeiouy".contains(&b))
            && !(suffix == "ed" && base.ends_with('e'))
        {
            let mut out = format!("{base}{with}");
            if with.is_empty() {
                undouble(&mut out);
                // "es" is a plural only after s, x, z, ch, sh ("boxes"); elsewhere
                // ("notes") the "e" belongs to the word.
                if suffix == "es"
                    && !(out.ends_with(['s', 'x', 'z']) || out.ends_with("ch") || out.ends_with("sh"))
                {
                    out.push('e');
                }
            }
            return strip_final_e(out);
        }
    }
    if let Some(base) = w.strip_suffix('s')
        && !base.ends_with(['s', 'u', 'i'])
    {
        return strip_final_e(base.to_owned());
    }
    strip_final_e(w.to_owned())
}

/// "runn" → "run", "stopp" → "stop" (but "fall", "miss", "buzz" stay).
fn undouble(word: &mut String) {
    let b = word.as_bytes();
    if b.len() >= 3 && b[b.len() - 1] == b[b.len() - 2] && !b"lsz".contains(&b[b.len() - 1]) {
        word.pop();
    }
}

/// A final silent "e" goes, so that "note", "notes" and "noted" meet at "not".
fn strip_final_e(mut word: String) -> String {
    if word.len() > 3 && word.ends_with('e') && !word.ends_with("ee") {
        word.pop();
    }
    word
}

/// BM25's parameters (the usual ones, and SQLite FTS5's).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The BM25 score of one document: `tf` is how often each query term occurs in it,
/// `df` in how many of the `docs` documents each occurs, `len` its length in terms and
/// `avg_len` the mean length.
pub(super) fn bm25(tf: &[usize], df: &[usize], docs: usize, len: usize, avg_len: f64) -> f64 {
    let mut score = 0.0;
    for (&tf, &df) in tf.iter().zip(df) {
        if tf == 0 {
            continue;
        }
        let idf = ((docs as f64 - df as f64 + 0.5) / (df as f64 + 0.5) + 1.0).ln();
        let tf = tf as f64;
        let norm = K1 * (1.0 - B + B * len as f64 / avg_len.max(1.0));
        score += idf * tf * (K1 + 1.0) / (tf + norm);
    }
    score
}

/// At most `max` characters of `text` on one line, starting near byte `at` (a word the
/// query matched), with `…` where it was cut.
pub(super) fn excerpt(text: &str, at: usize, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars: Vec<char> = flat.chars().collect();
    if chars.len() <= max {
        return flat;
    }
    // `at` is a byte offset in `text`; count the characters before it in the flattened
    // text approximately by the words before it.
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let words_before = text[..at].split_whitespace().count();
    let char_at: usize = flat.split(' ').take(words_before).map(|w| w.chars().count() + 1).sum();
    let start = char_at.saturating_sub(max / 4).min(chars.len() - max);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..start + max]);
    if start + max < chars.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_queries_become_quoted_words_or_nothing() {
        assert_eq!(fts_query("\"foo").as_deref(), Some("\"foo\""));
        assert_eq!(fts_query("AND OR").as_deref(), Some("\"and\" OR \"or\""), "only stopwords: kept");
        assert_eq!(fts_query("is the user running?").as_deref(), Some("\"user\" OR \"running\""));
        assert_eq!(
            fts_query("a* NEAR(b c) -d ^e col:f").as_deref(),
            Some("\"near\" OR \"b\" OR \"c\" OR \"d\" OR \"e\" OR \"col\" OR \"f\"")
        );
        assert_eq!(fts_query("\"\" ( ) * :"), None);
        assert_eq!(fts_query("Café café"), Some("\"café\"".into()));
        let long = (0..100).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
        assert_eq!(fts_query(&long).unwrap().matches(" OR ").count(), MAX_QUERY_WORDS - 1);
    }

    #[test]
    fn covering_queries_name_each_term_once() {
        let terms = fts_terms("user prefer coffee friday morning");
        let terms: Vec<&String> = terms.iter().collect();
        assert_eq!(covering(&terms, 0), r#""user" AND "prefer" AND "coffee" AND "friday" AND "morning""#);
        assert_eq!(covering(&terms, 1), r#"("user" OR "prefer") AND ("coffee" OR "friday" OR "morning")"#);
        assert_eq!(covering(&terms, 2), r#"("user" OR "prefer" OR "coffee" OR "friday" OR "morning")"#);
        assert_eq!(covering(&terms, 4), r#"("user" OR "prefer" OR "coffee" OR "friday" OR "morning")"#);
        assert_eq!(covering(&terms[..1], 0), r#""user""#);
    }

    #[test]
    fn inflections_share_a_stem() {
        for group in [
            &["run", "runs", "running"][..],
            &["meeting", "meetings"],
            &["note", "notes", "noted"],
            &["allergy", "allergies"],
            &["prefer", "prefers", "preferred"],
            &["box", "boxes"],
            &["deploy", "deployed", "deploying", "deploys"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(stems.iter().all(|s| *s == stems[0]), "{group:?} -> {stems:?}");
        }
        assert_ne!(stem("cat"), stem("cart"));
        assert_eq!(stem("is"), "is");
        assert_eq!(stem("speed"), stem("speeds"), "\"ed\" after an \"e\" is part of the word");
    }

    #[test]
    fn bm25_prefers_rarer_terms_and_shorter_documents() {
        let rare = bm25(&[1], &[1], 100, 10, 10.0);
        let common = bm25(&[1], &[90], 100, 10, 10.0);
        assert!(rare > common && common > 0.0);
        assert!(bm25(&[1], &[5], 100, 5, 10.0) > bm25(&[1], &[5], 100, 50, 10.0));
        assert_eq!(bm25(&[0], &[5], 100, 5, 10.0), 0.0);
    }

    #[test]
    fn excerpts_fit_one_line_and_say_where_they_were_cut() {
        assert_eq!(excerpt("a\n b", 0, 10), "a b");
        let text = format!("{} needle {}", "x ".repeat(100), "y ".repeat(100));
        let at = text.find("needle").unwrap();
        let got = excerpt(&text, at, 40);
        assert!(got.contains("needle") && got.starts_with('…') && got.ends_with('…'), "{got}");
        assert_eq!(got.chars().count(), 42);
    }
}

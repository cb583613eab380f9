//! The light stemmer, BM25 scoring and excerpts the in-process store ranks with. (How a
//! query becomes words, and an FTS5 query for the SQLite store, is [`crate::fts`].)

pub(super) use crate::fts::{query_words, words};

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

//! Untrusted query text to SQLite FTS5 queries, and the narrowing of a broad query to
//! the rows worth ranking: shared by the memory bundle's SQLite store and the agent's
//! knowledge index.
//!
//! Hand-written because the query is untrusted: FTS5 gives meaning to `"`, `*`, `^`, `:`,
//! `(`, `)`, `-`, `+`, `NEAR` and the bare words `AND`, `OR`, `NOT`. Rather than escape
//! each, the query is cut into words (runs of letters and digits) and every word is
//! written as a quoted string, so whatever the model sends, the index only ever sees
//! quoted words joined by `OR` and `AND`.
//!
//! Ranking every row that matches any word of a long query is what makes a search slow
//! (`bm25()` costs about 2 µs a row, a snippet more): [`Coverage`] counts, from each
//! word's list of rows (cheap: about 0.3 µs a row), how many of the words each row holds,
//! so a broad query ranks only the rows holding the most of them.

/// The most words of a query that are searched; the rest are ignored (a pasted page
/// should not become a thousand-term query).
pub const MAX_QUERY_WORDS: usize = 64;

/// The words of `text`: maximal runs of letters and digits, lowercased.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
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
pub fn query_words(query: &str) -> Vec<String> {
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
pub fn fts_terms(query: &str) -> Vec<String> {
    // A word holds no `"` (only letters and digits), but double any anyway: that is
    // FTS5's escape inside a string, and keeps this correct if `words` ever changes.
    query_words(query).iter().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect()
}

/// The FTS5 query matching any of `terms` (ranking, not the operator, prefers memories
/// that match more of them).
pub fn any_of(terms: &[String]) -> String {
    terms.join(" OR ")
}

/// An FTS5 query that matches every memory holding all of `terms` but at most
/// `missing`, and names each term once, so `bm25()` scores a match exactly as under
/// [`any_of`]. The terms are cut into groups of `missing + 1` (the last takes the
/// remainder) and the query asks for one term of each group: a memory that lacks at
/// most `missing` terms cannot lack a whole group. With no missing term it is all the
/// terms; with one group, [`any_of`].
pub fn covering(terms: &[&String], missing: usize) -> String {
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
fn fts_query(query: &str) -> Option<String> {
    let terms = fts_terms(query);
    (!terms.is_empty()).then(|| any_of(&terms))
}

/// A light English stemmer: strips common inflections so that "running", "runs" and
/// "run", or "meetings" and "meeting", fall together. Not Porter's algorithm (SQLite's
/// FTS5 uses that): the in-process memory store only needs to agree with itself, and a
/// [`snippet`] only places its window with it.
pub fn stem(word: &str) -> String {
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

/// About `words` words of `text` on one line: the window holding the most of `query`'s
/// words (compared by [`stem`]; the first such window, its first found word a quarter
/// in), with `…` where it was cut. The
/// text's start when none of them is in it. Made in Rust for the few results a search
/// returns, instead of by FTS5's `snippet()`, which would run the full-text query again.
pub fn snippet(text: &str, query: &str, words: usize) -> String {
    let wanted: Vec<String> = query_words(query).iter().map(|w| stem(w)).collect();
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let size = words.max(1);
    if tokens.len() <= size {
        return tokens.join(" ");
    }
    // Which query word each token is, if any.
    let hits: Vec<Option<usize>> = tokens
        .iter()
        .map(|token| {
            let word: String =
                token.chars().filter(|c| c.is_alphanumeric()).collect::<String>().to_lowercase();
            (!word.is_empty()).then(|| stem(&word)).and_then(|s| wanted.iter().position(|w| *w == s))
        })
        .collect();
    let mut best = (0, 0);
    for start in 0..=tokens.len() - size {
        let mut seen: Vec<usize> = hits[start..start + size].iter().flatten().copied().collect();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() > best.1 {
            best = (start, seen.len());
        }
    }
    // The first word found a quarter into the window rather than at its edge (moving
    // forward only, so no found word is lost).
    let mut start = best.0;
    if let Some(first) = (start..start + size).find(|&i| hits[i].is_some()) {
        start = start.max((first.saturating_sub(size / 4)).min(tokens.len() - size));
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(&tokens[start..start + size].join(" "));
    if start + size < tokens.len() {
        out.push('…');
    }
    out
}

/// How many of a query's terms each row holds, counted from each term's postings (the
/// rows it occurs in), to narrow a broad query to the rows that hold the most terms.
#[derive(Debug, Clone)]
pub struct Coverage<'t> {
    /// Each row holding a term, with how many it holds.
    held: Vec<(i64, usize)>,
    /// The terms some row holds, rarest first (a term no row holds adds nothing to any
    /// score).
    terms: Vec<&'t String>,
    /// `at_least[n]`: how many rows hold at least `n` of `terms`.
    at_least: Vec<usize>,
}

/// A narrowed query: the rows holding at least `need` of the terms, and an FTS5 query
/// that matches each of them and names every term once (so `bm25()` scores them exactly
/// as under [`any_of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Narrowed {
    /// The FTS5 query ([`covering`]).
    pub query: String,
    /// The rows to rank, in no particular order.
    pub rows: Vec<i64>,
    /// How many of the terms each of them holds, at least.
    pub need: usize,
}

impl<'t> Coverage<'t> {
    /// Counts the terms each row holds; `postings` gives the rows one FTS5 term (as
    /// [`fts_terms`] writes it) matches.
    pub fn count<E>(
        terms: &'t [String],
        mut postings: impl FnMut(&str) -> Result<Vec<i64>, E>,
    ) -> Result<Self, E> {
        // Every term's rows in one list, sorted: each row's run is how many terms it
        // holds (cheaper than a hash map for the tens of thousands of rows common words
        // have).
        let mut all: Vec<i64> = Vec::new();
        let mut frequency = Vec::with_capacity(terms.len());
        for term in terms {
            let rows = postings(term)?;
            frequency.push(rows.len());
            all.extend(rows);
        }
        all.sort_unstable();
        let mut held: Vec<(i64, usize)> = Vec::new();
        for row in all {
            match held.last_mut() {
                Some((last, n)) if *last == row => *n += 1,
                _ => held.push((row, 1)),
            }
        }
        let mut by_rarity: Vec<(usize, &String)> =
            frequency.into_iter().zip(terms).filter(|(n, _)| *n > 0).collect();
        by_rarity.sort_by_key(|(n, _)| *n);
        let terms: Vec<&String> = by_rarity.into_iter().map(|(_, t)| t).collect();
        let mut at_least = vec![0usize; terms.len() + 1];
        for &(_, n) in &held {
            at_least[n.min(terms.len())] += 1;
        }
        for n in (1..terms.len()).rev() {
            at_least[n] += at_least[n + 1];
        }
        Ok(Self { held, terms, at_least })
    }

    /// How many rows hold at least one term.
    pub fn rows(&self) -> usize {
        self.held.len()
    }

    /// The narrowest query that still leaves `limit` rows to rank: the rows holding all
    /// the terms if they are enough, else all but one, and so on, holding at most `most`
    /// terms. `None` when that comes down to one term: rank every match then.
    pub fn narrow(&self, limit: usize, most: usize) -> Option<Narrowed> {
        let mut need = most.min(self.terms.len());
        while need > 1 && self.at_least[need] < limit {
            need -= 1;
        }
        if need <= 1 {
            return None;
        }
        let rows = self.held.iter().filter(|(_, n)| *n >= need).map(|(row, _)| *row).collect();
        Some(Narrowed { query: covering(&self.terms, self.terms.len() - need), rows, need })
    }
}

/// An SQL condition keeping the rows of `column` among `rows`: `AND +column IN (1,2,3) `.
/// The row ids are numbers the caller read, written into the SQL as such; the `+` keeps
/// SQLite from handing them to FTS5 as rowid lookups, which would run the full-text query
/// (and `bm25`'s statistics) again for each one.
pub fn among_rows(column: &str, rows: &[i64]) -> String {
    let list: Vec<String> = rows.iter().map(i64::to_string).collect();
    format!("AND +{column} IN ({}) ", list.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

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
    fn coverage_narrows_to_the_rows_holding_most_terms() {
        let terms = fts_terms("rare middling common");
        // rare: rows 1, 2; middling: 1, 2, 3, 4; common: every row 1..=10.
        let lists: HashMap<&str, Vec<i64>> = HashMap::from([
            ("\"rare\"", vec![1, 2]),
            ("\"middling\"", vec![1, 2, 3, 4]),
            ("\"common\"", (1..=10).collect()),
        ]);
        let coverage = Coverage::count(&terms, |t| Ok::<_, ()>(lists[t].clone())).unwrap();
        assert_eq!(coverage.rows(), 10);
        let two = coverage.narrow(2, 3).unwrap();
        assert_eq!((two.need, two.query.as_str()), (3, r#""rare" AND "middling" AND "common""#));
        let mut rows = coverage.narrow(3, 3).unwrap().rows;
        rows.sort();
        assert_eq!(rows, [1, 2, 3, 4], "three rows wanted: those holding two of the terms");
        assert_eq!(coverage.narrow(3, 3).unwrap().query, r#"("rare" OR "middling" OR "common")"#);
        assert_eq!(coverage.narrow(5, 3), None, "five rows wanted: every match is ranked");
        assert_eq!(coverage.narrow(2, 1), None);
        assert_eq!(among_rows("t.rowid", &[3, 1]), "AND +t.rowid IN (3,1) ");
    }

    #[test]
    fn snippets_show_the_window_with_the_most_query_words() {
        let text = "One two three four five. Stars collapse into black holes after a supernova explodes. Six seven eight nine ten eleven.";
        assert_eq!(
            snippet(text, "what do exploding stars leave", 6),
            "…five. Stars collapse into black holes…"
        );
        assert_eq!(
            snippet(text, "supernova star", 8),
            "…Stars collapse into black holes after a supernova…",
            "two words in one window beat one"
        );
        assert_eq!(snippet(text, "nothing matches", 3), "One two three…");
        assert_eq!(snippet("short\ntext", "x", 12), "short text");
        assert_eq!(snippet("", "x", 12), "");
    }
}

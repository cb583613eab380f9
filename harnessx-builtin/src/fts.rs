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

use std::collections::HashMap;

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

/// How many of a query's terms each row holds, counted from each term's postings (the
/// rows it occurs in), to narrow a broad query to the rows that hold the most terms.
#[derive(Debug, Clone)]
pub struct Coverage<'t> {
    /// Row → how many terms it holds.
    held: HashMap<i64, usize>,
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
        let mut held: HashMap<i64, usize> = HashMap::new();
        let mut frequency = Vec::with_capacity(terms.len());
        for term in terms {
            let rows = postings(term)?;
            frequency.push(rows.len());
            for row in rows {
                *held.entry(row).or_default() += 1;
            }
        }
        let mut by_rarity: Vec<(usize, &String)> =
            frequency.into_iter().zip(terms).filter(|(n, _)| *n > 0).collect();
        by_rarity.sort_by_key(|(n, _)| *n);
        let terms: Vec<&String> = by_rarity.into_iter().map(|(_, t)| t).collect();
        let mut at_least = vec![0usize; terms.len() + 1];
        for &n in held.values() {
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
        let rows = self.held.iter().filter(|(_, n)| **n >= need).map(|(row, _)| *row).collect();
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
}

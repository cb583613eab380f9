//! Tool names: validation, and the formatting-only repair of names a model got wrong.
//!
//! A name is repaired only when it differs from exactly one registered name by letter
//! case, separators (`search-web`, `searchWeb`, `search.web`, `search web`, `searchweb`)
//! or one of the prefixes `functions.`, `tools.` and `default_api:`, in any combination
//! and for names of every style (`searchWeb` is found as `searchweb` or `SEARCHWEB`).
//! Spelling similarity only supplies suggestions; it never selects a tool.

/// Prefixes some models put in front of a tool name.
pub const KNOWN_PREFIXES: [&str; 3] = ["functions.", "tools.", "default_api:"];

/// Longest accepted tool name.
pub const MAX_NAME_LEN: usize = 64;

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Removes the known prefixes (repeatedly, case-insensitively) from a requested name.
pub fn strip_known_prefixes(mut name: &str) -> &str {
    'outer: loop {
        for prefix in KNOWN_PREFIXES {
            if name.len() > prefix.len()
                && name.is_char_boundary(prefix.len())
                && name[..prefix.len()].eq_ignore_ascii_case(prefix)
            {
                name = &name[prefix.len()..];
                continue 'outer;
            }
        }
        return name;
    }
}

/// The formatting-insensitive key of a name: its letters and digits, lower-cased, with
/// the separators `_`, `-`, `.` and whitespace left out.
///
/// Two names with the same key differ only by letter case and separators, in any
/// combination and whatever the style of either: `search_web`, `searchWeb`,
/// `searchweb`, `SEARCHWEB`, `Search-Web` and `search web` are all `searchweb`. Whether
/// such a difference is repaired is the caller's rule (exactly one name may match).
pub fn repair_key(name: &str) -> String {
    let mut key = String::with_capacity(name.len());
    for c in name.chars().filter(|&c| !is_separator(c)) {
        key.extend(c.to_lowercase());
    }
    key
}

/// The characters name repair treats as separators.
fn is_separator(c: char) -> bool {
    matches!(c, '_' | '-' | '.') || c.is_whitespace()
}

/// Up to `limit` registered names that look like `requested`, best first.
pub fn suggestions<'a>(requested: &str, names: impl Iterator<Item = &'a str>, limit: usize) -> Vec<&'a str> {
    let wanted = repair_key(strip_known_prefixes(requested));
    let mut scored: Vec<(f64, &str)> = names
        .map(|name| {
            let key = repair_key(name);
            let mut score = strsim::jaro_winkler(&wanted, &key);
            if !wanted.is_empty() && (key.contains(&wanted) || wanted.contains(&key)) {
                score = score.max(0.85);
            }
            (score, name)
        })
        .filter(|(score, _)| *score >= 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.into_iter().take(limit).map(|(_, n)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names() {
        assert!(is_valid_tool_name("search_web"));
        assert!(is_valid_tool_name("get-sum"));
        assert!(is_valid_tool_name(&"a".repeat(64)));
        assert!(!is_valid_tool_name(&"a".repeat(65)));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("search.web"));
        assert!(!is_valid_tool_name("search web"));
    }

    #[test]
    fn keys_ignore_case_and_separators() {
        for variant in [
            "search_web",
            "Search_Web",
            "SEARCH_WEB",
            "search-web",
            "searchWeb",
            "SearchWeb",
            "search.web",
            "search web",
            "search__web",
            "searchweb",
            "SEARCHWEB",
            "Searchweb",
            "sEaRcH-wEb",
            "_search_web_",
        ] {
            assert_eq!(repair_key(variant), "searchweb", "{variant}");
        }
        assert_eq!(repair_key("HTTPServer"), repair_key("http_server"));
        assert_eq!(repair_key("getHTTPResponse"), repair_key("get_http_response"));
        assert_eq!(repair_key("read_file2"), "readfile2");
        assert_eq!(repair_key("file2Read"), repair_key("file2_read"));
        // A typo is not a formatting difference.
        assert_ne!(repair_key("serch_web"), repair_key("search_web"));
        assert_ne!(repair_key("search_webs"), repair_key("search_web"));
        assert_ne!(repair_key("search/web"), repair_key("search_web"));
    }

    #[test]
    fn keys_fold_letters_beyond_ascii() {
        assert_eq!(repair_key("Straße_Prüfen"), repair_key("straßeprüfen"));
        assert_eq!(repair_key("ÉCRIRE"), "écrire");
    }

    #[test]
    fn prefixes_are_stripped() {
        assert_eq!(strip_known_prefixes("functions.search_web"), "search_web");
        assert_eq!(strip_known_prefixes("tools.search_web"), "search_web");
        assert_eq!(strip_known_prefixes("default_api:search_web"), "search_web");
        assert_eq!(strip_known_prefixes("Functions.default_api:x"), "x");
        assert_eq!(strip_known_prefixes("functions."), "functions.");
        assert_eq!(strip_known_prefixes("functionsx"), "functionsx");
    }

    #[test]
    fn suggestions_rank_close_names() {
        let names = ["search_web", "fetch_url", "read_file", "write_file", "search_files"];
        let got = suggestions("serch_web", names.iter().copied(), 3);
        assert_eq!(got.first(), Some(&"search_web"));
        assert!(got.len() <= 3);
        assert!(suggestions("zzzzzz", names.iter().copied(), 3).is_empty());
    }
}

//! Small text helpers of the printed lines: one-line summaries, shell words, run ids.

/// `s` on one line, cut to `max` characters.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max { flat.chars().take(max).collect::<String>() + "…" } else { flat }
}

/// `word` as one word of a POSIX shell command line: as is when it is plain, else single-quoted.
pub(crate) fn shell_word(word: &str) -> String {
    let plain =
        !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// A new run id: `run-` + milliseconds since the epoch + `-` + the process id.
pub(crate) fn new_run_id() -> String {
    format!("run-{}-{}", harnessx::time::now_unix_ms(), std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_quote_only_what_the_shell_would_split_or_expand() {
        assert_eq!(shell_word("run-1-2"), "run-1-2");
        assert_eq!(shell_word("dir/runs.db"), "dir/runs.db");
        assert_eq!(shell_word("my runs.db"), "'my runs.db'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn new_run_ids_are_printable_words() {
        let id = new_run_id();
        assert!(id.starts_with("run-"), "{id}");
        assert_eq!(shell_word(&id), id);
    }
}

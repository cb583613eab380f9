//! Docs that stay true: the README's layout table and `docs/workspace.md` list every
//! workspace package (as `cargo metadata` has them) and state the facade's real default
//! features, and every page of `docs/` is compiled as a doctest (included with
//! `#[doc = include_str!(..)]` in some package's sources), and so is every crate's
//! README (its crate doc); the pages that are not the guide's (the summary, the
//! performance diary) stay out of it. A new crate, feature or page fails here until the
//! docs say so.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

/// What `cargo metadata --no-deps` says of the workspace (the fields read here).
#[derive(Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    workspace_root: PathBuf,
}

#[derive(Deserialize)]
struct Package {
    name: String,
    manifest_path: PathBuf,
    features: std::collections::BTreeMap<String, Vec<String>>,
}

fn metadata() -> Metadata {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("running cargo metadata");
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The first column's first `code` name of each row of the Markdown table under the
/// heading `heading` (the whole document when `None`) whose header row begins with
/// `| first_header |`.
fn table_names(doc: &str, heading: Option<&str>, first_header: &str) -> BTreeSet<String> {
    let text = match heading {
        Some(h) => {
            let start = doc.find(&format!("\n{h}\n")).unwrap_or_else(|| panic!("no heading {h:?}"));
            &doc[start..]
        }
        None => doc,
    };
    let header = format!("| {first_header} |");
    let start =
        text.find(&header).unwrap_or_else(|| panic!("no table whose first column is {first_header:?}"));
    text[start..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .skip(2) // the header and its `| --- |` row
        .map(|row| {
            let cell = row.split('|').nth(1).unwrap_or_default();
            let name = cell.split('`').nth(1).unwrap_or_else(|| panic!("no `name` in the row {row:?}"));
            name.to_owned()
        })
        .collect()
}

/// Every list of features the text states as "default features `a`, `b`, ...".
fn stated_default_features(doc: &str) -> Vec<BTreeSet<String>> {
    let marker = "default features `";
    doc.match_indices(marker)
        .map(|(i, _)| {
            let mut rest = &doc[i + marker.len() - 1..];
            let mut names = BTreeSet::new();
            while let Some(after) = rest.strip_prefix('`') {
                let end = after.find('`').expect("a closing backtick");
                names.insert(after[..end].to_owned());
                rest = &after[end + 1..];
                match rest.strip_prefix(", ").or_else(|| rest.strip_prefix(" and ")) {
                    Some(next) if next.starts_with('`') => rest = next,
                    _ => break,
                }
            }
            names
        })
        .collect()
}

#[test]
fn the_readme_and_docs_workspace_list_every_workspace_package_and_no_other() {
    let meta = metadata();
    let packages: BTreeSet<String> = meta.packages.iter().map(|p| p.name.clone()).collect();
    let readme = read(&meta.workspace_root.join("README.md"));
    let workspace = read(&meta.workspace_root.join("docs/workspace.md"));
    for (doc, listed) in [
        ("README.md, ## Layout", table_names(&readme, Some("## Layout"), "Crate")),
        ("docs/workspace.md", table_names(&workspace, None, "crate")),
    ] {
        let missing: Vec<&String> = packages.difference(&listed).collect();
        let unknown: Vec<&String> = listed.difference(&packages).collect();
        assert!(
            missing.is_empty() && unknown.is_empty(),
            "{doc}: the table must list every workspace package by its name: missing {missing:?}, \
             not a package {unknown:?}"
        );
    }
}

#[test]
fn the_readme_and_docs_workspace_state_the_facades_default_features() {
    let meta = metadata();
    let facade = meta.packages.iter().find(|p| p.name == "harnessx").expect("the facade package");
    let defaults: BTreeSet<String> =
        facade.features.get("default").cloned().unwrap_or_default().into_iter().collect();
    for doc in ["README.md", "docs/workspace.md"] {
        let stated = stated_default_features(&read(&meta.workspace_root.join(doc)));
        assert!(!stated.is_empty(), "{doc} must say \"default features `a`, `b`\" for the facade");
        for list in stated {
            assert_eq!(list, defaults, "{doc} states other default features than Cargo.toml's");
        }
    }
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The pages of `docs/` that are not guide pages: neither compiled nor listed in the
/// summary.
const NOT_GUIDE_PAGES: [(&str, &str); 2] = [
    ("SUMMARY.md", "the table of contents: no snippet to compile"),
    (
        "performance-history.md",
        "the measurement diary behind performance.md: superseded figures, not a guide page",
    ),
];

#[test]
fn every_page_of_docs_is_compiled_as_a_doctest_and_listed_in_the_summary() {
    let meta = metadata();
    let docs = meta.workspace_root.join("docs");
    // Every `#[doc = include_str!("...")]` (or `#![doc = ..]`) in the packages' sources.
    let mut included = BTreeSet::new();
    for package in &meta.packages {
        let mut files = Vec::new();
        rust_files(&package.manifest_path.parent().unwrap().join("src"), &mut files);
        for file in files {
            let text = read(&file);
            for (i, _) in text.match_indices("doc = include_str!(\"") {
                let rest = &text[i + "doc = include_str!(\"".len()..];
                let relative = &rest[..rest.find('"').unwrap()];
                if let Ok(path) = file.parent().unwrap().join(relative).canonicalize() {
                    included.insert(path);
                }
            }
        }
    }
    let summary = read(&docs.join("SUMMARY.md"));
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    let mut left_out = Vec::new();
    for page in pages {
        let name = page.file_name().unwrap().to_str().unwrap().to_owned();
        if NOT_GUIDE_PAGES.iter().any(|(not_guide, _)| *not_guide == name) {
            // Kept out of the guide, and so of its doctests: a Rust snippet there would
            // go unchecked.
            assert!(!included.contains(&page.canonicalize().unwrap()), "docs/{name} is not a guide page");
            assert_eq!(rust_blocks(&read(&page)), 0, "docs/{name} is not compiled: no Rust snippets there");
            continue;
        }
        assert!(summary.contains(&format!("]({name})")), "docs/SUMMARY.md does not list {name}");
        if !included.contains(&page.canonicalize().unwrap()) {
            left_out.push(name);
        }
    }
    assert!(
        left_out.is_empty(),
        "pages of docs/ no doctest compiles (add `#[doc = include_str!(\"../docs/PAGE\")]` to \
         src/guide.rs): {left_out:?}"
    );
}

/// How many code blocks of a Markdown text rustdoc compiles as doctests: fenced ones
/// with no language, or with `rust` or one of rustdoc's attributes first.
fn rust_blocks(doc: &str) -> usize {
    let mut open = false;
    let mut count = 0;
    for line in doc.lines() {
        let Some(info) = line.trim_start().strip_prefix("```") else { continue };
        if open {
            open = false;
            continue;
        }
        open = true;
        let first = info.split(',').next().unwrap_or_default().trim();
        let rustdoc = ["", "rust", "ignore", "no_run", "should_panic", "compile_fail", "edition2024"];
        if rustdoc.contains(&first) {
            count += 1;
        }
    }
    count
}

#[test]
fn every_crates_readme_is_its_crate_doc_so_its_snippets_are_compiled() {
    const INCLUDED: &str = "#![doc = include_str!(\"../README.md\")]";
    for package in metadata().packages {
        let dir = package.manifest_path.parent().unwrap();
        let readme = dir.join("README.md");
        if !readme.exists() {
            continue; // harnessx-test-support: not published, no README
        }
        let (lib, main) = (dir.join("src/lib.rs"), dir.join("src/main.rs"));
        if lib.exists() {
            assert!(
                read(&lib).contains(INCLUDED),
                "{}: src/lib.rs must begin with {INCLUDED}, so `cargo test --doc` compiles the README's snippets",
                package.name
            );
        } else {
            assert!(read(&main).contains(INCLUDED), "{}: src/main.rs must say {INCLUDED}", package.name);
            // rustdoc does not run a binary's doctests: a Rust snippet here would go unchecked.
            assert_eq!(
                rust_blocks(&read(&readme)),
                0,
                "{}'s README has Rust snippets, which no doctest compiles (a binary's docs are not \
                 tested): mark them ```sh or ```text, or move them to a library's docs",
                package.name
            );
        }
    }
}

#[test]
fn rust_blocks_counts_what_rustdoc_compiles() {
    let doc = "```sh\nls\n```\n```\nlet a = 1;\n```\n```rust,no_run\nx();\n```\n```text\nhi\n```\n";
    assert_eq!(rust_blocks(doc), 2);
}

//! Knowledge indexing and search over 10,000 generated concepts (about 80 words, three
//! `[[links]]`, an alias and two tags each, in 100 folders): a full index into memory, a
//! second build on an index file with nothing changed, and searches of two and five words.
//!
//! `cargo bench -p harnessx-agent --bench knowledge`

use std::fmt::Write as _;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use harnessx_agent::KnowledgeSource;
use harnessx_agent::knowledge::Knowledge;

const CONCEPTS: usize = 10_000;

/// A deterministic stream of numbers (an LCG), so every run indexes the same text.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

/// 2,000 made-up words of two to four syllables.
fn vocabulary(rng: &mut Rng) -> Vec<String> {
    const SYLLABLES: [&str; 20] = [
        "ka", "lo", "mi", "ren", "sa", "tor", "vi", "nu", "pel", "dra", "ost", "ei", "gan", "hul", "bri",
        "qua", "zen", "fo", "wy", "cet",
    ];
    (0..2_000).map(|_| (0..2 + rng.next(3)).map(|_| SYLLABLES[rng.next(SYLLABLES.len())]).collect()).collect()
}

fn generate(dir: &Path) {
    let mut rng = Rng(7);
    let words = vocabulary(&mut rng);
    for i in 0..CONCEPTS {
        let folder = dir.join(format!("f{:03}", i % 100));
        std::fs::create_dir_all(&folder).unwrap();
        let mut text = format!(
            "---\nid: c{i}\ntitle: {} {}\naliases: [\"{} {i}\"]\ntags: [{}, {}]\n---\n\n",
            words[rng.next(words.len())],
            words[rng.next(words.len())],
            words[rng.next(words.len())],
            words[rng.next(50)],
            words[rng.next(50)]
        );
        for w in 0..80 {
            // Zipf-like: low word numbers are common, high ones rare.
            let r = rng.next(words.len());
            let word = &words[r * r / words.len()];
            text.push_str(word);
            text.push(if w % 12 == 11 { '.' } else { ' ' });
        }
        for _ in 0..3 {
            let _ = write!(text, " See [[c{}]].", rng.next(CONCEPTS));
        }
        std::fs::write(folder.join(format!("c{i}.md")), text).unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let concepts = dir.path().join("concepts");
    generate(&concepts);
    let mut group = c.benchmark_group("knowledge");
    group.sample_size(10);
    group.bench_function("index_10k_in_memory", |b| {
        b.iter(|| Knowledge::open(&KnowledgeSource::dir(&concepts)).unwrap())
    });
    let file = dir.path().join("index.db");
    drop(Knowledge::open(&KnowledgeSource::dir(&concepts).index_file(&file)).unwrap());
    group.bench_function("reindex_10k_unchanged_file", |b| {
        b.iter(|| Knowledge::open(&KnowledgeSource::dir(&concepts).index_file(&file)).unwrap())
    });
    group.finish();

    let knowledge = Knowledge::open(&KnowledgeSource::dir(&concepts)).unwrap();
    assert_eq!(knowledge.len(), CONCEPTS);
    let words = vocabulary(&mut Rng(7));
    let mut group = c.benchmark_group("knowledge");
    // A rare and a middling word; then five words, two of them common.
    let two = format!("{} {}", words[1_500], words[600]);
    let five = format!("{} {} {} {} {}", words[1_900], words[800], words[400], words[10], words[3]);
    group.bench_function("search_10k_two_words", |b| b.iter(|| knowledge.search(&two, 10).unwrap()));
    group.bench_function("search_10k_five_words", |b| b.iter(|| knowledge.search(&five, 10).unwrap()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

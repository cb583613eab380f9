//! The cost of checking one typed answer: JSON Schema validation plus deserialisation
//! into the Rust type (what a typed run does with every answer), for a small struct and
//! a nested one (enums, `Option`, `Vec`, maps); and the same from the answer's text
//! (parsing included, as modes `native` and `prompted` see it).
//!
//! `cargo bench -p harnessx-agent --bench output`

use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use harnessx_agent::output::{Output, answer_json};
use harnessx_core::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Serialize, Deserialize, JsonSchema)]
struct City {
    name: String,
    population: u64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Capital,
    Port { depth_m: u32 },
    Twin(String),
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Atlas {
    label: String,
    kind: Kind,
    motto: Option<String>,
    cities: Vec<City>,
    aliases: HashMap<String, Vec<String>>,
    ranks: BTreeMap<String, Option<i32>>,
}

fn atlas() -> Atlas {
    Atlas {
        label: "Europe".into(),
        kind: Kind::Port { depth_m: 12 },
        motto: None,
        cities: (0..20).map(|i| City { name: format!("city {i}"), population: i * 1000 }).collect(),
        aliases: (0..10).map(|i| (format!("c{i}"), vec![format!("alias {i}")])).collect(),
        ranks: (0..10).map(|i| (format!("c{i}"), Some(i))).collect(),
    }
}

/// Validation, the decoding check, and the final decode into `T`: one answer.
fn checked<T: for<'de> Deserialize<'de>>(output: &Output, answer: &Value) -> T {
    let value = output.check(answer.clone()).unwrap();
    T::deserialize(&value).unwrap()
}

fn bench(c: &mut Criterion) {
    let city = Output::of::<City>();
    let city_answer = serde_json::to_value(City { name: "Paris".into(), population: 2_100_000 }).unwrap();
    let nested = Output::of::<Atlas>();
    let nested_answer = serde_json::to_value(atlas()).unwrap();
    let nested_text = format!("```json\n{nested_answer:#}\n```");

    let mut group = c.benchmark_group("output_check");
    group.bench_function("city", |b| b.iter(|| black_box(checked::<City>(&city, black_box(&city_answer)))));
    group.bench_function("atlas_nested", |b| {
        b.iter(|| black_box(checked::<Atlas>(&nested, black_box(&nested_answer))))
    });
    group.bench_function("atlas_nested_from_fenced_text", |b| {
        b.iter(|| {
            let answer = answer_json(black_box(&nested_text)).unwrap();
            black_box(checked::<Atlas>(&nested, &answer))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! Rule matching per call: what a manager with 100 permission rules (allow, ask and deny,
//! on names, paths and shell commands) costs a call, next to a manager without rules.
//!
//! `cargo bench -p harnessx-core --bench rules`

use criterion::{Criterion, criterion_group, criterion_main};
use harnessx_core::{AuthRequest, PermissionLevel, PermissionManager, PermissionRules};
use serde_json::json;

/// 100 rules over 12 tools: 40 shell rules on `run_bash`, 50 path rules on the file
/// tools, 10 on names.
fn hundred_rules() -> PermissionRules {
    let mut rules = PermissionRules::new().base_path("/work/project");
    let words = ["git", "cargo", "npm", "ls", "cat", "grep", "make", "docker", "kubectl", "python"];
    let subs = ["status", "build", "test", "log"];
    for (i, word) in words.iter().enumerate() {
        for (j, sub) in subs.iter().enumerate() {
            let level = if (i + j) % 5 == 0 { PermissionLevel::Deny } else { PermissionLevel::Allow };
            rules.add(level, &format!("run_bash({word} {sub}*)")).unwrap();
        }
    }
    let tools = ["read_file", "write_file", "edit_file", "delete", "list_directory"];
    for (i, tool) in tools.iter().enumerate() {
        for k in 0..10 {
            let level = match (i + k) % 3 {
                0 => PermissionLevel::Deny,
                1 => PermissionLevel::Ask,
                _ => PermissionLevel::Allow,
            };
            rules.add(level, &format!("{tool}(path=dir{k}/**/*.rs)")).unwrap();
        }
    }
    for k in 0..10 {
        rules.add(PermissionLevel::Allow, &format!("tool_{k}")).unwrap();
    }
    assert_eq!(rules.len(), 100);
    rules
}

fn bench(c: &mut Criterion) {
    let with = PermissionManager::new(PermissionLevel::Ask).with_rules(hundred_rules());
    let without = PermissionManager::new(PermissionLevel::Ask);
    let path = json!({"path": "./dir7//src/../lib/main.rs"});
    let bash = json!({"command": "git status -s && cargo test --workspace | grep ok"});
    let quoted = json!({"command": "git log --format='%h %s' -n 5 && echo \"done\""});
    let free = json!({"a": 1});
    let request = |tool: &'static str, args: &'static serde_json::Value| AuthRequest {
        tool,
        permission: None,
        call_id: "c1",
        arguments: args,
    };
    let path: &'static serde_json::Value = Box::leak(Box::new(path));
    let bash: &'static serde_json::Value = Box::leak(Box::new(bash));
    let free: &'static serde_json::Value = Box::leak(Box::new(free));
    let quoted: &'static serde_json::Value = Box::leak(Box::new(quoted));

    let mut g = c.benchmark_group("rules_per_call");
    g.bench_function("no_rules", |b| {
        b.iter(|| without.rules(std::hint::black_box(request("read_file", path))))
    });
    g.bench_function("100_rules_name", |b| {
        b.iter(|| with.rules(std::hint::black_box(request("tool_3", free))))
    });
    g.bench_function("100_rules_untouched_tool", |b| {
        b.iter(|| with.rules(std::hint::black_box(request("fetch_url", free))))
    });
    g.bench_function("100_rules_path", |b| {
        b.iter(|| with.rules(std::hint::black_box(request("read_file", path))))
    });
    g.bench_function("100_rules_bash", |b| {
        b.iter(|| with.rules(std::hint::black_box(request("run_bash", bash))))
    });
    // Quotes: the script goes through the shell parser.
    g.bench_function("100_rules_bash_parsed", |b| {
        b.iter(|| with.rules(std::hint::black_box(request("run_bash", quoted))))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

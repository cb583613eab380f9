#!/usr/bin/env bash
# Macro expansion cost: builds a crate of 100 `#[tool]` functions and the same crate
# without the attribute, and prints the median wall time of 3 rebuilds of each.
#
#   bash harnessx-macros/bench/expansion_cost.sh [N_FNS] [RUNS]
#
# Both crates depend on the workspace's `harnessx` (path dependency) and share one
# target dir, so dependencies are built once and only the crate itself is timed
# (`touch src/lib.rs` before each build). Debug profile, as in the edit-compile loop.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
n="${1:-100}"
runs="${2:-3}"
work="${BENCH_DIR:-/tmp/harnessx-expansion-cost}"
mkdir -p "$work"
export CARGO_TARGET_DIR="$work/target"
# Full rebuild of the crate each time (no incremental reuse), the conservative measure.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

gen() { # gen NAME ATTR
  local dir="$work/$1" attr="$2"
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "$1"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
harnessx = { path = "$root" }

[workspace]
TOML
  {
    echo "//! $n tool functions."
    echo "#![allow(missing_docs, dead_code)]"
    for i in $(seq 1 "$n"); do
      cat <<RS
/// Join the inputs of tool $i.
///
/// Args:
///     a: A number.
///     b: An optional label.
///     c: Some counts.
$attr
pub fn tool_$i(a: i64, b: Option<String>, c: Vec<u32>) -> Result<String, String> {
    if a < 0 {
        return Err(format!("negative: {a}"));
    }
    Ok(format!("{a} {} {}", b.unwrap_or_default(), c.len()))
}
RS
    done
  } > "$dir/src/lib.rs"
}

gen with_tool "#[harnessx::tool]"
gen without_tool ""

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

measure() {
  local dir="$work/$1"
  (cd "$dir" && cargo build -q 2>&1) # warm: dependencies
  for _ in $(seq 1 "$runs"); do
    touch "$dir/src/lib.rs"
    local start end
    start=$(date +%s.%N)
    (cd "$dir" && cargo build -q 2>&1)
    end=$(date +%s.%N)
    awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f\n", e - s }'
  done | median
}

without=$(measure without_tool)
with=$(measure with_tool)
ratio=$(awk -v w="$with" -v o="$without" 'BEGIN { printf "%.2f", w / o }')
echo "fns=$n runs=$runs without_tool=${without}s with_tool=${with}s ratio=${ratio}"

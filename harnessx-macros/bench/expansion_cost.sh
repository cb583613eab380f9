#!/usr/bin/env bash
# Macro expansion cost: builds a crate of 100 `#[tool]` functions and the same crate
# without the attribute, and prints the median wall time of RUNS rebuilds of each
# (alternating between the two crates).
#
#   bash harnessx-macros/bench/expansion_cost.sh [N_FNS] [RUNS] [uniform|varied]
#   SIGNATURES=varied bash harnessx-macros/bench/expansion_cost.sh 100 5
#   REGISTER=1 bash harnessx-macros/bench/expansion_cost.sh 100 5 varied
#
# `uniform` (the default): every function is `fn(a: i64, b: Option<String>, c: Vec<u32>)`.
# `varied`: every function has its own signature (up to 100): `a` rotates over 10 scalar
# types by i % 10, `c` over 10 container types by (i / 10) % 10, so nothing generic over
# the signature is shared between tools.
#
# `REGISTER=1`: the crate with the attribute also has a `pub fn registry()` registering
# all its tools, so the definitions and handlers are compiled in it too (a generated
# tool's definition is a constant, compiled where it is registered).
#
# Both crates depend on the workspace's `harnessx` (path dependency) and share one
# target dir, so dependencies are built once and only the crate itself is timed
# (`touch src/lib.rs` before each build). Debug profile, as in the edit-compile loop.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
n="${1:-100}"
runs="${2:-3}"
mode="${3:-${SIGNATURES:-uniform}}"
case "$mode" in
  uniform) work="${BENCH_DIR:-/tmp/harnessx-expansion-cost}" ;;
  varied) work="${BENCH_DIR:-/tmp/harnessx-expansion-cost-varied}" ;;
  *) echo "unknown mode '$mode' (uniform or varied)" >&2; exit 2 ;;
esac
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
    if [ "$mode" = varied ]; then gen_varied "$attr"; else gen_uniform "$attr"; fi
    if [ -n "$attr" ] && [ "${REGISTER:-0}" = 1 ]; then gen_registry; fi
  } > "$dir/src/lib.rs"
}

gen_registry() { # a function registering every tool
  local first=1 last="$n"
  if [ "$mode" = varied ]; then first=0; last=$((n - 1)); fi
  echo "pub fn registry() -> harnessx::ToolRegistry {"
  echo "    let registry = harnessx::ToolRegistry::new();"
  for i in $(seq "$first" "$last"); do
    echo "    registry.register_tool(Tool$i).unwrap();"
  done
  echo "    registry"
  echo "}"
}

gen_uniform() { # gen_uniform ATTR
  local attr="$1"
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
}

gen_varied() { # gen_varied ATTR
  local attr="$1"
  local as=(i64 i32 u32 u64 f64 f32 bool String u8 i16)
  local cs=("Vec<u32>" "Vec<String>" "Vec<i64>" "Option<u32>" "Vec<bool>" "Vec<f64>" "Option<i64>" "Vec<Vec<u32>>" "Option<bool>" "Vec<u8>")
  echo "//! $n tool functions with $n distinct signatures."
  echo "#![allow(missing_docs, dead_code)]"
  for i in $(seq 0 $((n - 1))); do
    cat <<RS
/// Join the inputs of tool $i.
///
/// Args:
///     a: A value.
///     b: An optional label.
///     c: Some values.
$attr
pub fn tool_$i(a: ${as[i % 10]}, b: Option<String>, c: ${cs[(i / 10) % 10]}) -> Result<String, String> {
    Ok(format!("{:?} {} {:?}", a, b.unwrap_or_default(), c))
}
RS
  done
}

gen with_tool "#[harnessx::tool]"
gen without_tool ""

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

build_time() { # build_time NAME: seconds for one full rebuild of the crate
  local dir="$work/$1" start end
  touch "$dir/src/lib.rs"
  start=$(date +%s.%N)
  (cd "$dir" && cargo build -q 2>&1)
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f\n", e - s }'
}

# Warm (dependencies), then alternate the two crates so drifting machine load hits both.
(cd "$work/without_tool" && cargo build -q 2>&1)
(cd "$work/with_tool" && cargo build -q 2>&1)
: > "$work/without.times"
: > "$work/with.times"
for _ in $(seq 1 "$runs"); do
  build_time without_tool >> "$work/without.times"
  build_time with_tool >> "$work/with.times"
done
without=$(median < "$work/without.times")
with=$(median < "$work/with.times")
ratio=$(awk -v w="$with" -v o="$without" 'BEGIN { printf "%.2f", w / o }')
echo "mode=$mode register=${REGISTER:-0} fns=$n runs=$runs without_tool=${without}s with_tool=${with}s ratio=${ratio}"

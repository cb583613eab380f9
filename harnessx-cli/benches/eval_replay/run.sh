#!/bin/sh
# `harnessx eval --replay`, whole process: 100 cases of 10 turns recorded once against a
# loopback OpenAI-compatible model (model.py), then replayed with the model stopped and
# timed by farm-bench (or `time` without it). docs/performance.md, "Replay (issue 46)".
#
#   cargo build --profile bench -p harnessx-cli && sh harnessx-cli/benches/eval_replay/run.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${HARNESSX:-$here/../../../target/release/harnessx}
work=$(mktemp -d)
trap 'kill $model 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
python3 "$here/cases.py"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 "$here/model.py" "$port" & model=$!
sleep 1
"$bin" eval cases.toml --model openai:m --base-url "http://127.0.0.1:$port/v1" --record tapes --jobs 8 | tail -1
kill $model
echo "$(ls tapes | wc -l) cassettes; replaying with the model stopped:"
for jobs in 1 4; do
  if command -v farm-bench >/dev/null; then
    farm-bench -n 10 -- "$bin" eval cases.toml --model openai:m --replay tapes --jobs $jobs | tail -6
  else
    time "$bin" eval cases.toml --model openai:m --replay tapes --jobs $jobs | tail -1
  fi
done

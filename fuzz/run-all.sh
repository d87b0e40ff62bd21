#!/usr/bin/env bash
# Runs every fuzz target for TIME seconds (default 60) and prints the executions each one made.
#
#   fuzz/run-all.sh TIME [TARGET ...]     e.g. fuzz/run-all.sh 600, fuzz/run-all.sh 60 catalog
#   MERGE=1 fuzz/run-all.sh TIME          afterwards, rebuild the committed seeds (set-cover merge)
#   RUNS=10000000 fuzz/run-all.sh 7200    stop each target after RUNS executions (or TIME seconds)
#
# One libFuzzer process per target, one after the other (one job, one worker), with the bounds the
# readers promise: no input may take more than 1 s (-timeout=1), the process may not grow past
# 2 GiB (-rss_limit_mb) and no single allocation may exceed 512 MiB (-malloc_limit_mb). Overflow
# checks are on (-a): an arithmetic overflow is a crash too.
#
# Inputs: the committed, minimised corpus fuzz/seeds/TARGET (read-only here) plus the test fixtures;
# new inputs go to fuzz/corpus/TARGET (git-ignored). A crash is saved under fuzz/artifacts/TARGET
# and ends that target's run with a non-zero status; the script goes on with the next target and
# exits non-zero at the end. Needs cargo-fuzz (`cargo install cargo-fuzz --locked`) and a nightly
# toolchain (`cargo +nightly`); with only stable, RUSTC_BOOTSTRAP=1 is used instead.
set -uo pipefail
cd "$(dirname "$0")"
TIME=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(gguf safetensors hf_config catalog scenario)

if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  fuzz=(cargo +nightly fuzz)
else
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
fi

# Extra seed folders and the dictionary per target.
extra() {
  case "$1" in
    gguf | safetensors) echo "../tests/fixtures/import" ;;
    hf_config) echo "../tests/fixtures/configs" ;;
    catalog) echo "../tests/fixtures/catalog ../catalogs" ;;
    scenario) echo "../tests/fixtures/export" ;;
  esac
}
# Generated inputs are capped at 4 KiB for the RON targets: a few entries reach every check (cross-
# entry validation needs two), a longer input only repeats entries, and parsing time grows with
# length. Larger seeds (the built-in catalogs, up to 60 KB) are read truncated; tests/catalog.rs
# loads them whole.
max_len() {
  case "$1" in
    catalog | scenario) echo "-max_len=4096" ;;
  esac
}
dict() {
  case "$1" in
    catalog | scenario) echo "ron.dict" ;;
    *) echo "$1.dict" ;;
  esac
}

mkdir -p logs
status=0
summary=()
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "seeds/$t" "artifacts/$t"
  log="logs/$t.log"
  # shellcheck disable=SC2046
  "${fuzz[@]}" run -a "$t" "corpus/$t" "seeds/$t" $(extra "$t") -- \
    -dict="$(dict "$t")" -max_total_time="$TIME" -timeout=1 $(max_len "$t") \
    ${RUNS:+-runs=$RUNS} \
    -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 \
    -artifact_prefix="artifacts/$t/" >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  secs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*' | tail -1)
  if [ $rc -ne 0 ]; then
    status=1
    summary+=("$t: FAILED (exit $rc) after ${runs:-?} executions; see fuzz/$log and fuzz/artifacts/$t/")
  else
    summary+=("$t: ${runs:-?} executions in ${secs:-$TIME} s, no crash, hang or allocation over the bounds")
  fi
  # The committed seeds are rebuilt as the smallest set of inputs (seeds and new corpus together)
  # that still reaches every edge reached so far: libFuzzer's set-cover merge over edges alone
  # (-use_counters=0), which keeps them to a few hundred kilobytes per target.
  if [ "${MERGE:-0}" = 1 ] && [ $rc -eq 0 ]; then
    rm -rf "seeds/$t.new" && mkdir -p "seeds/$t.new"
    # shellcheck disable=SC2046
    if "${fuzz[@]}" run -a "$t" "seeds/$t.new" "seeds/$t" "corpus/$t" -- -set_cover_merge=1 \
      -use_counters=0 -timeout=1 $(max_len "$t") -rss_limit_mb=2048 -malloc_limit_mb=512 \
      >>"$log" 2>&1; then
      rm -rf "seeds/$t" && mv "seeds/$t.new" "seeds/$t"
    else
      rm -rf "seeds/$t.new"
      status=1
    fi
  fi
done
printf '%s\n' "${summary[@]}"
exit $status

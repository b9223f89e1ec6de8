#!/usr/bin/env bash
# Builds the HTTP parser fuzzer (libFuzzer + AddressSanitizer) and runs it.
#   Tests/Fuzz/run-fuzzer.sh [seconds] [jobs]      (default: 60 seconds, 1 job)
# New inputs found go to .build/fuzz/corpus (seeded from Tests/Fuzz/corpus); crashes to .build/fuzz/.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
jobs=${2:-1}
out=.build/fuzz
mkdir -p "$out/corpus"
cp -n Tests/Fuzz/corpus/* "$out/corpus/" 2>/dev/null || true
swiftc -sanitize=fuzzer,address -parse-as-library -O -g -module-name BearerHTTPFuzz -package-name BearerProxy \
    Sources/BearerHTTP/*.swift Tests/Fuzz/ParserFuzzer.swift -o "$out/parser-fuzzer"
cd "$out"    # libFuzzer writes its job logs (fuzz-N.log) into the working directory
./parser-fuzzer corpus -max_total_time="$seconds" -jobs="$jobs" -workers="$jobs" \
    -max_len=8192 -timeout=10 -artifact_prefix=./ -print_final_stats=1

#!/usr/bin/env bash
# Builds the libFuzzer executable (Tests/Fuzzer) with libFuzzer and AddressSanitizer — the
# library's code too, so its coverage is instrumented — and runs it on a copy of the committed
# seed corpus. Docs/Testing.md, "libFuzzer", explains the targets and how to replay a crash.
#
#   Scripts/fuzz.sh [--build-only] [--seed-corpus] [libFuzzer options…] [crash or corpus files…]
#
#   --build-only    build, print the executable's path, and stop
#   --seed-corpus   rewrite Tests/Fuzzer/Corpus from the current code (then commit it)
#   anything else   passed to the fuzzer; e.g. -max_total_time=3600 -jobs=1 -workers=1, or a
#                   crash file to replay it. Without files, it fuzzes a work corpus
#                   (.build/fuzzer/corpus, seeded from Tests/Fuzzer/Corpus).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
scratch="$root/.build/fuzzer"

if ! pkg-config --exists liblz4 2>/dev/null; then
    ${SUDO:-} apt-get update -qq && ${SUDO:-} apt-get install -y -qq liblz4-dev pkg-config >/dev/null
fi

build_only=0
seed_corpus=0
args=()
for arg in "$@"; do
    case "$arg" in
        --build-only) build_only=1 ;;
        --seed-corpus) seed_corpus=1 ;;
        *) args+=("$arg") ;;
    esac
done

# STRATA_LIBFUZZER declares the StrataFuzzer target (Package.swift). `--sanitize fuzzer` makes
# SwiftPM link libFuzzer's main; the sanitizers are then given again as one
# -sanitize=fuzzer,address, because SwiftPM's `--sanitize fuzzer --sanitize address` passes two
# flags to the compiler and the second replaces the first, leaving the Swift code without
# coverage instrumentation. -enable-testing lets the fuzzer reach the internal node decoders.
export STRATA_LIBFUZZER=1
flags=(-c release --scratch-path "$scratch" --product StrataFuzzer --sanitize fuzzer
       -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing -Xcc -fsanitize=address)
swift build "${flags[@]}" >&2
binary="$(swift build "${flags[@]}" --show-bin-path)/StrataFuzzer"

if [ "$build_only" = 1 ]; then echo "$binary"; exit 0; fi
if [ "$seed_corpus" = 1 ]; then
    rm -rf Tests/Fuzzer/Corpus && STRATA_FUZZ_WRITE_CORPUS="$root/Tests/Fuzzer/Corpus" "$binary"
    exit 0
fi

# Replaying files, or fuzzing with an explicit corpus folder: as given.
for arg in "${args[@]+"${args[@]}"}"; do
    if [ -e "$arg" ]; then exec "$binary" "${args[@]}"; fi
done

corpus="$scratch/corpus"
mkdir -p "$corpus"
cp -n Tests/Fuzzer/Corpus/* "$corpus/" 2>/dev/null || true
# -timeout: an input running 60 s is a hang (the slowest take well under a second; on a busy
# shared machine one took 13 s, so a tighter bound reports false hangs); -malloc_limit_mb: one allocation above 512 MiB
# is a finding (a size taken from unchecked bytes); -max_len fits the seed store.
exec "$binary" -timeout=60 -malloc_limit_mb=512 -rss_limit_mb=2048 -max_len=65536 \
    "${args[@]+"${args[@]}"}" "$corpus" Tests/Fuzzer/Corpus

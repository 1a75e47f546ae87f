# Strata — the two commands (README.md):
#   make bench   the benchmark suite (quick by default) on stores in a temporary folder, then its
#                charts (Benchmarks/results/latest-*.svg)
#   make test    the tests
# Both install liblz4-dev (the tests also python3; the benchmarks the headers of SQLite, LMDB and
# RocksDB) when missing.

SWIFT ?= swift
BENCH_ARGS ?=

.PHONY: test test-sanitizers check bench bench-report bench-check deps bench-deps

deps:
	@if ! pkg-config --exists liblz4 2>/dev/null; then \
		echo "Installing liblz4-dev..."; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq liblz4-dev pkg-config >/dev/null; \
	fi
	@if ! command -v python3 >/dev/null; then \
		echo "Installing python3 (the tests run Scripts/strata_reader.py, the independent reader)..."; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq python3 >/dev/null; \
	fi

bench-deps: deps
	@if ! pkg-config --exists sqlite3 2>/dev/null; then \
		echo "Installing libsqlite3-dev..."; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libsqlite3-dev pkg-config >/dev/null; \
	fi
	@if ! pkg-config --exists lmdb rocksdb 2>/dev/null; then \
		echo "Installing liblmdb-dev and librocksdb-dev..."; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq liblmdb-dev librocksdb-dev pkg-config >/dev/null; \
	fi
	@command -v taskset >/dev/null || { echo "taskset (util-linux) is needed for --cores 1"; exit 1; }

test: deps
	$(SWIFT) test -c release

# CI (.ci/run, first): platform code only in the I/O layer's shim (Sources/StrataIO/Platform.swift),
# conditional Foundation imports, and each target importing only the targets below it.
check:
	Scripts/check-platform.sh
	Scripts/check-imports.sh

# CI (.ci/run, after `make test`): the suites over unsafe-pointer code under AddressSanitizer, the
# concurrency tests under ThreadSanitizer, each a debug build in its own scratch folder so the
# release build is kept. Docs/Testing.md ("Sanitizers in CI") says what is skipped and why.
# LeakSanitizer: .ci/lsan.supp hides one leak of the toolchain's XCTest runner. ThreadSanitizer
# stops at the first report (halt_on_error), so a race fails the run; -DSTRATA_TSAN swaps
# Synchronization.Mutex for a pthread mutex ThreadSanitizer can see (`Lock` in Sources/StrataIO/Lock.swift).
ASAN_FILTER = StrataFormatTests|PendingChunkTests|StrataSchemaTests|StrataIOTests|PartialPageTests|ScratchBufferTests|TornTailTests|GoldenFixtureTests|UncachedLeafReadTests|ClockTableTests|StoreRootTests|TableChunkDecodeTests|RoundTripTests|RecordFixtureTests|VerifyTests
ASAN_SKIP = IndexKeyTests|RecordConditionTests
TSAN_FILTER = ConcurrentStoreTests|BackupTests|ParallelScanTests|ParallelFetchTests|concurrentFirstLookupsSeeEveryPage|ConcurrencyTests|ConcurrentTransformTests|ObserverTests|CrossProcessHistoryTests|FramePipelineTests|ReaderProcessTests|refreshesWhileTheWriterAppends|ScratchBufferTests|AsyncAPITests|splitStreamsEveryRecordInBatches|theBackgroundPassFinishesAlongsideTheAppsWrites|didMigrateOverMoreRecordsThanTheFlushBound|aTransformSettingOneSideOfARelationship
TSAN_SKIP = powerCuts|aPowerCutAtEverySyncPoint|injectedErrors|aFailureAtAnyStepLeavesNoDestination|anExistingDestinationIsRefusedAndLeftAsItWas|aCopyThatFailsVerificationLeavesNoDestination|framesVerificationAndCancellation|progressGoesForwardToTheTotal

test-sanitizers: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan.supp $(SWIFT) test --sanitize=address --scratch-path .build/asan-debug \
		--filter '$(ASAN_FILTER)' --skip '$(ASAN_SKIP)'
	TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --sanitize=thread --scratch-path .build/tsan-debug -Xswiftc -DSTRATA_TSAN \
		--filter '$(TSAN_FILTER)' --skip '$(TSAN_SKIP)'

# The benchmark package builds the library as a path dependency; its cached build plan can
# miss source files added to the library since, so it is re-planned on every run (seconds).
bench: bench-deps
	rm -f Benchmarks/.build/release.yaml
	cd Benchmarks && $(SWIFT) run -c release StrataBenchmarks --json $(BENCH_JSON) $(BENCH_ARGS)
	cd Benchmarks && $(SWIFT) run -c release StrataBenchmarkReport --results $(BENCH_JSON) --charts results --chart-prefix latest-

# The README's benchmark table and the charts it shows (Benchmarks/results/migration-time.svg,
# ratios.svg) are generated from committed results files by StrataBenchmarkReport (Foundation
# only: it builds without the library or SQLite). `make bench-report` regenerates them from the
# files the README's table names, or from BENCH_RESULTS (comma-separated, later files' rows
# replace earlier ones' for the same workload, baseline and cores); commit those files with them.
# `make bench-check` (CI) fails when the committed table or charts differ from what the files
# make, and runs the generator's tests.
BENCH_JSON ?= results/latest.json
BENCH_RESULTS ?=

bench-report:
	$(SWIFT) run --package-path Benchmarks -c release StrataBenchmarkReport $(if $(BENCH_RESULTS),--results $(BENCH_RESULTS)) \
		--readme README.md --charts Benchmarks/results

bench-check:
	$(SWIFT) build --package-path Benchmarks --product StrataBenchmarksPackageTests
	$(SWIFT) test --package-path Benchmarks --skip-build
	$(SWIFT) run --package-path Benchmarks StrataBenchmarkReport --readme README.md --charts Benchmarks/results --check

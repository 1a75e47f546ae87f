# Strata — the two commands (README.md):
#   make bench   the benchmark suite (quick by default) on stores in a temporary folder
#   make test    the tests
# Both install liblz4-dev (and, for the benchmarks, SQLite's headers) when missing.

SWIFT ?= swift
BENCH_ARGS ?=

.PHONY: test bench deps bench-deps

deps:
	@if ! pkg-config --exists liblz4 2>/dev/null; then \
		echo "Installing liblz4-dev..."; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq liblz4-dev pkg-config >/dev/null; \
	fi

bench-deps: deps
	@if ! pkg-config --exists sqlite3 2>/dev/null; then \
		echo "Installing libsqlite3-dev..."; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libsqlite3-dev pkg-config >/dev/null; \
	fi

test: deps
	$(SWIFT) test -c release

# The benchmark package builds the library as a path dependency; its cached build plan can
# miss source files added to the library since, so it is re-planned on every run (seconds).
bench: bench-deps
	rm -f Benchmarks/.build/release.yaml
	cd Benchmarks && $(SWIFT) run -c release StrataBenchmarks $(BENCH_ARGS)

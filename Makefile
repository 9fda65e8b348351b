# Thin wrappers around CMake/ctest; see README.md.  Every build tree is a
# configure preset of CMakePresets.json (cmake --list-presets): the options
# live there, the Makefile only calls them.
#   make            release build: build/libmmalloc.so, build/libmmalloc.a (preset release)
#   make test       every test suite (release, MM_DEBUG=3, sanitizers, fuzzer, trust, Rust, Debian)
#   make bench      the allocator comparison (quick default; FULL=1 for all)
#   make install    PREFIX=/usr/local by default
# BUILD=dir puts the release tree elsewhere (the preset's options, -B dir).
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX ?= /usr/local
CMAKE  ?= cmake
CTEST  ?= ctest
BUILD  ?= build

.PHONY: all deps test test-release test-debug test-asan test-tsan test-fuzz fuzz test-trust test-rust test-debian soak bench install clean

# The release tree may be moved with BUILD=, so it is built and tested by
# directory; the other trees by their build and test presets.
all:
	$(CMAKE) --preset release -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	$(CMAKE) --build $(BUILD) -j $(JOBS)

# What the tests and benchmarks need (apt/pip; a no-op once installed).
deps:
	@tools/install-deps.sh

test: deps
	$(MAKE) test-release test-debug test-asan test-tsan test-fuzz test-trust test-rust test-debian

test-release: all
	cd $(BUILD) && $(CTEST) --output-on-failure -j $(JOBS)

# The Rust crates (rust/): cargo test with the default features and with
# secure+override, then `cargo package` of both (ready to publish; never
# published).  Without cargo: says so and passes, the C library's tests
# being the rest of make test.  Packaging verifies mmalloc against the
# mmalloc-sys it just packaged, which cargo unpacks under its home's
# registry/src/-<hash>/ (a local registry's directory) and does not unpack
# again while a copy is there: an earlier run's copy, with an older API,
# would be built instead, so ours are removed first.
CARGO_SRC = $(or $(CARGO_HOME),$(HOME)/.cargo)/registry/src
test-rust:
	@if ! command -v cargo >/dev/null 2>&1; then \
	  echo "test-rust: SKIPPED: no cargo on this machine (tools/install-deps.sh installs it)"; \
	else \
	  cd rust && cargo test --locked && cargo test --locked --features secure,override && \
	  if cargo package --help 2>/dev/null | grep -q -- --workspace; then \
	    rm -rf $(CARGO_SRC)/-*/mmalloc-sys-[0-9]* $(CARGO_SRC)/-*/mmalloc-[0-9]* && \
	    cargo package --locked --workspace --allow-dirty; \
	  else echo "test-rust: cargo package skipped: this cargo cannot package a workspace"; fi; \
	fi

# The Debian packages (debian/): built, checked by lintian, installed, used
# as a user would (pkg-config, find_package, mmrun), removed, twice
# (test/debian/run.sh; as root only, else it says it skipped).
test-debian:
	@test/debian/run.sh build-debian

# $(call preset,X): configure and build the tree of preset X (its build
# preset names the targets; its test preset, run after, the ctest labels).
define preset
$(CMAKE) --preset $(1) >/dev/null
$(CMAKE) --build --preset $(1) -j $(JOBS)
endef

# MM_DEBUG=3: every structure checker runs on entry and exit of its mutators
# (labels unit|api|stress|robust).
test-debug:
	$(call preset,debug)
	$(CTEST) --preset debug -j $(JOBS)

# ASan+UBSan, MM_DEBUG=2 (labels unit|sanitize).
test-asan:
	$(call preset,asan)
	$(CTEST) --preset asan -j $(JOBS)

# TSan, MM_DEBUG=2 (label sanitize).
test-tsan:
	$(call preset,tsan)
	$(CTEST) --preset tsan -j $(JOBS)

# Fuzzing (test/fuzz/README.md).  make fuzz [SECONDS=60] [MERGE=1] [DIFF=1]: libFuzzer
# (clang, preset fuzz: build-fuzz) on test/fuzz/corpus; make test-fuzz: 60 s of it and
# the gcc driver's ctests (preset fuzz-gcc: build-fuzz-gcc), or the driver alone
# without clang.
SECONDS ?= 60
fuzz:
	JOBS=$(JOBS) test/fuzz/run.sh fuzz $(SECONDS) $(if $(MERGE),--merge) $(if $(DIFF),--diff)

test-fuzz:
	JOBS=$(JOBS) test/fuzz/run.sh test

# Trust suite (test/trust/CMakeLists.txt): fault injection and memcheck reports
# (preset trust: build-trust, MM_FAULT_INJECTION=ON MM_VALGRIND=ON), secure
# mode switched on at run time (build-trust) and compiled in (preset secure:
# build-secure, MM_SECURE=ON), then a 30 s soak of the stress test under ASan.
# Every part runs; the target fails if any did.  make soak [SOAK_SECONDS=600]
# [SOAK_THREADS=4] [SOAK_SAN=address|thread|none]: tools/soak.sh on its own.
SOAK_SECONDS ?= 600
SOAK_THREADS ?= 4
SOAK_SAN ?= address
test-trust: deps
	$(call preset,trust)
	$(call preset,secure)
	@status=0; \
	$(CTEST) --preset trust -j $(JOBS) || status=1; \
	$(CTEST) --preset secure -j $(JOBS) || status=1; \
	SOAK_JOBS=$(JOBS) tools/soak.sh 30 $(SOAK_THREADS) address || status=1; \
	exit $$status

soak:
	SOAK_JOBS=$(JOBS) tools/soak.sh $(SOAK_SECONDS) $(SOAK_THREADS) $(SOAK_SAN)

bench: deps all
	python3 bench/run.py --build-dir $(BUILD) $(if $(FULL),--full,) $(BENCH_ARGS)

install: all
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-debug build-asan build-tsan build-fuzz build-fuzz-gcc build-trust \
	  build-secure build-soak-* build-debian rust/target

# Thin wrappers around CMake/ctest; see README.md.
#   make            release build: build/libmmalloc.so, build/libmmalloc.a
#   make test       every test suite (release, MM_DEBUG=3, sanitizers, fuzzer, trust)
#   make bench      the allocator comparison (quick default; FULL=1 for all)
#   make install    PREFIX=/usr/local by default
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX ?= /usr/local
CMAKE  ?= cmake
BUILD  ?= build

.PHONY: all deps test test-release test-debug test-asan test-tsan test-fuzz fuzz test-trust soak bench install clean

all:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	$(CMAKE) --build $(BUILD) -j $(JOBS)

# What the tests and benchmarks need (apt/pip; a no-op once installed).
deps:
	@tools/install-deps.sh

test: deps
	$(MAKE) test-release test-debug test-asan test-tsan test-fuzz test-trust

test-release: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# MM_DEBUG=3: every structure checker runs on entry and exit of its mutators.
test-debug:
	$(CMAKE) -S . -B build-debug -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMM_DEBUG=3 -DMM_BUILD_BENCH=OFF >/dev/null
	$(CMAKE) --build build-debug -j $(JOBS)
	cd build-debug && ctest --output-on-failure -j $(JOBS) -L 'unit|api|stress|robust'

test-asan:
	$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMM_SANITIZE=address -DMM_BUILD_BENCH=OFF >/dev/null
	$(CMAKE) --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) -L 'unit|sanitize'

test-tsan:
	$(CMAKE) -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMM_SANITIZE=thread -DMM_BUILD_BENCH=OFF >/dev/null
	$(CMAKE) --build build-tsan -j $(JOBS)
	cd build-tsan && ctest --output-on-failure -j $(JOBS) -L 'sanitize'

# Fuzzing (test/fuzz/README.md).  make fuzz [SECONDS=60] [MERGE=1] [DIFF=1]: libFuzzer
# (clang, build-fuzz) on test/fuzz/corpus; make test-fuzz: 60 s of it and the gcc
# driver's ctests (build-fuzz-gcc), or the driver alone without clang.
SECONDS ?= 60
fuzz:
	JOBS=$(JOBS) test/fuzz/run.sh fuzz $(SECONDS) $(if $(MERGE),--merge) $(if $(DIFF),--diff)

test-fuzz:
	JOBS=$(JOBS) test/fuzz/run.sh test

# Trust suite (test/trust/CMakeLists.txt): fault injection and memcheck reports
# (build-trust: -DMM_FAULT_INJECTION=ON -DMM_VALGRIND=ON), secure mode switched
# on at run time (build-trust) and compiled in (build-secure: -DMM_SECURE=ON),
# then a 30 s soak of the stress test under ASan.  Every part runs; the target
# fails if any did.  make soak [SOAK_SECONDS=600] [SOAK_THREADS=4]
# [SOAK_SAN=address|thread|none]: tools/soak.sh on its own.
SOAK_SECONDS ?= 600
SOAK_THREADS ?= 4
SOAK_SAN ?= address
TRUST_TARGETS = mmalloc trust_faults trust_vgprog trust_secure stress_mm16 stress_override \
  api_mm api_std api_stats api_options api_cxx api_override_shared api_override_static
test-trust: deps
	$(CMAKE) -S . -B build-trust -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMM_FAULT_INJECTION=ON \
	  -DMM_VALGRIND=ON -DMM_BUILD_BENCH=OFF -DMM_BUILD_STREAM=OFF >/dev/null
	$(CMAKE) --build build-trust -j $(JOBS) --target $(TRUST_TARGETS)
	$(CMAKE) -S . -B build-secure -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMM_SECURE=ON \
	  -DMM_BUILD_BENCH=OFF -DMM_BUILD_STREAM=OFF >/dev/null
	$(CMAKE) --build build-secure -j $(JOBS) --target mmalloc trust_secure
	@status=0; \
	(cd build-trust && ctest --output-on-failure -j $(JOBS) -L trust) || status=1; \
	(cd build-secure && ctest --output-on-failure -j $(JOBS) -L trust) || status=1; \
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
	  build-secure build-soak-*

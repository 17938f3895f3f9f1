# base/libc.mk: the glibc-ABI layer (base/libc/) that runs Debian's static
# libtpms.a, libcrypto.a and libmbedcrypto.a inside the image, its ABI check
# and the libc-smoke image (included by the top-level Makefile).
LIBC_SRCS := base/libc/string.c base/libc/malloc.c base/libc/stdio.c base/libc/posix.c \
             base/libc/stubs.c base/libc/setjmp.S
LIBC_OBJS := $(patsubst %,$(IMGOBJ)/%.o,$(basename $(LIBC_SRCS)))
LIBC_LIBDIR   ?= /usr/lib/x86_64-linux-gnu
# Order matters without --start-group: libtpms needs libcrypto; neither
# references back, and mbedcrypto needs only the layer.
LIBC_ARCHIVES := $(LIBC_LIBDIR)/libtpms.a $(LIBC_LIBDIR)/libcrypto.a $(LIBC_LIBDIR)/libmbedcrypto.a

# Wiring into build/csvsm.elf: the layer replaces src/string.c (same
# memcpy/memset/... symbols), so it joins the image once src/string.c has
# left src/build.mk; until then csvsm.elf builds exactly as before.
ifeq ($(filter src/string.c,$(IMAGE_SRCS)),)
IMAGE_SRCS     += $(LIBC_SRCS)
IMAGE_ARCHIVES += $(LIBC_ARCHIVES)
endif

# libc-smoke: the image's boot/CPU/console objects (not src/main.o), the
# layer, tests/libc/smoke_main.c and the three archives.
LIBC_SMOKE_OBJS := $(addprefix $(IMGOBJ)/,src/boot.o tests/snpm/model/pvh_entry.o src/exception.o src/idt.o base/console.o \
                   src/cpu.o base/cpu.o base/secret.o src/smp.o base/fmt.o mm/pool.o mm/pgtable.o tests/libc/smoke_main.o) \
                   $(LIBC_OBJS)

$(BUILD)/libc-smoke.elf: $(LIBC_SMOKE_OBJS) $(LIBC_ARCHIVES) linker.ld
	$(CC) $(IMAGE_LDFLAGS) -o $@ $(LIBC_SMOKE_OBJS) $(LIBC_ARCHIVES) -lgcc

libc-check: $(LIBC_OBJS)
	base/libc/check-undefined.sh $(LIBC_OBJS)

TEST_SCRIPTS += base/libc/check-undefined.sh tests/libc/smoke.sh
.PHONY: libc-check

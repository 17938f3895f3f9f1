# tests/snpm/model/: the SNP machine's models of what is outside csvsm (see
# docs/snp-machine.md "The models"). Never in csvsm's image (build/csvsm.elf,
# build/csvsm.igvm; tests/tools/layers.sh checks): built into the host
# library for the unit tests, benchmarks and host tools, and as image objects
# into build/snpm.elf (tests/snpm/snpm.mk lists them). Included by the
# top-level Makefile after tests/build.mk.
MODEL_SRCS += tests/snpm/model/rmp.c tests/snpm/model/psp.c
HOST_SRCS  += tests/snpm/model/rmp.c tests/snpm/model/psp.c

test_rmp_LIBS := -lpthread
test_psp_LIBS := -lmbedx509 -lmbedcrypto

# bench/: build fragment (see the variables in the top-level Makefile).
# csvsm-accept-bench: the acceptance executor on the host against the RMP
# model, for bench/accept.sh (callgrind) to compare with the acceptance floor.
TOOLS += csvsm-accept-bench
csvsm-accept-bench_SRCS := bench/accept_bench.c
csvsm-accept-bench_LIBS := -lmbedcrypto

# The persistent vTPM's instructions on csvsm's side (bench/vtpm_bench.sh).
EXTRA_ALL += $(BUILD)/bench/vtpm_bench
$(BUILD)/bench/vtpm_bench: bench/vtpm_bench.c tests/unit/vchan_pipe.h kbs/jose.c $(HOST_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ bench/vtpm_bench.c kbs/jose.c $(HOST_LIB) -ltpms -ljansson -lcrypto -lmbedcrypto
bench-vtpm: $(BUILD)/bench/vtpm_bench $(BUILD)/csvsm-proxy $(BUILD)/vtpm-probe.efi $(BUILD)/snpm.elf
	bench/vtpm_bench.sh
.PHONY: bench-vtpm

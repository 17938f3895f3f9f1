# bench/: build fragment (see the variables in the top-level Makefile).
# csvsm-accept-bench: the acceptance executor on the host against the RMP
# model, for bench/accept.sh (callgrind) to compare with the acceptance floor.
TOOLS += csvsm-accept-bench
csvsm-accept-bench_SRCS := bench/accept_bench.c
csvsm-accept-bench_LIBS := -lmbedcrypto

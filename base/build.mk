# base/: the bottom layer (docs/architecture.md "Layers"): console and panic,
# the dashboard line, formatting, per-CPU data, time and entropy, the
# secrets registry, the platform pointer, the GHCB field accessors, and the
# glibc-ABI runtime (base/libc.mk). It calls nothing above it; mm/, tpm/,
# attest/ and src/ call down into it (tests/tools/layers.sh checks both).
IMAGE_SRCS += base/console.c base/cpu.c base/platform.c base/uart_chan.c
CORE_SRCS  += base/fmt.c base/secret.c base/ghcb.c

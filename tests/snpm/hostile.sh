#!/usr/bin/env bash
# The hostile guest's isolation attacks (issue 8) in the SNP machine, against
# csvsm's snp platform: tests/qemu/hostile.sh does the work.
PLATFORM=snpm exec bash "$(dirname "$0")/../qemu/hostile.sh" "$@"

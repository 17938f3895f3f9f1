#!/usr/bin/env bash
# trixie's OVMF and Linux, unmodified, as SEV-SNP guests at VMPL2 under csvsm's
# snp platform in the SNP machine: /init's suite with 0 failed, the evidence
# verified on the host, the machine's launch measurement and the reports'
# MEASUREMENT equal to `csvsm-measure --igvm`. tests/linux/linux.sh does the work.
PLATFORM=snpm exec bash "$(dirname "$0")/../linux/linux.sh" "$@"

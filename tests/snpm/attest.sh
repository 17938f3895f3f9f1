#!/usr/bin/env bash
# The probe and end-to-end attestation in the SNP machine: csvsm's snp image
# (build/csvsm.igvm) on the machine's SEV-SNP, PSP and KVM models, trixie's
# OVMF and the probe at VMPL2; the evidence verified on the host, the
# report's MEASUREMENT and the machine's launch measurement both equal to
# `csvsm-measure --igvm`. tests/qemu/attest.sh does the work.
PLATFORM=snpm exec bash "$(dirname "$0")/../qemu/attest.sh" "$@"

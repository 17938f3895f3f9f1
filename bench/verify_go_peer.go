// verify_go_peer: go-sev-guest's verify package (Debian's
// golang-github-google-go-sev-guest-dev, 0.13) verifying the same SEV-SNP
// reports as csvsm-verify, for bench/verify_bench.sh. Built offline by
// bench/verify_go_peer.sh; never part of `make test`.
//
//	verify_go_peer -report R -vcek V -ask A -ark K [-n N] [-mode M] [-time YYYY-MM-DD]
//
// Modes:
//
//	attestation  verify.SnpAttestation per report, what the package offers a
//	             verifier: it decodes the chain, checks the ARK against the
//	             roots it embeds (verify/trust), the ASK and the VCEK/VLEK
//	             (RSASSA-PSS), the VCEK's extensions and product, then the
//	             report's ECDSA P-384 signature (go-sev-guest 0.13
//	             verify/verify.go SnpAttestation, decodeCerts). It has no
//	             cache: each report pays the chain.
//	signature    the VCEK parsed once, then verify.SnpReportSignature per
//	             report (abi.ValidateReportFormat and the ECDSA signature):
//	             the closest it comes to csvsm's warm chain cache.
//
// Certificates are given (DisableCertFetching: nothing is fetched). It prints
// one line: "go-sev-guest MODE: N reports, verdict ok|<error>, S s, R reports/s"
// and exits 1 when the first verification fails (the bench then reports the
// verdict instead of a rate).
package main

import (
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/google/go-sev-guest/abi"
	spb "github.com/google/go-sev-guest/proto/sevsnp"
	"github.com/google/go-sev-guest/verify"
	"github.com/google/go-sev-guest/verify/trust"
)

func must(b []byte, err error) []byte {
	if err != nil {
		fmt.Fprintln(os.Stderr, "verify_go_peer:", err)
		os.Exit(2)
	}
	return b
}

// der returns a certificate's DER bytes, from PEM or DER (trust.ParseCert).
func der(path string) []byte {
	c, err := trust.ParseCert(must(os.ReadFile(path)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "verify_go_peer: %s: %v\n", path, err)
		os.Exit(2)
	}
	return c.Raw
}

func main() {
	report := flag.String("report", "", "1184-byte SEV-SNP report")
	vcekPath := flag.String("vcek", "", "VCEK or VLEK certificate (DER or PEM)")
	askPath := flag.String("ask", "", "ASK or ASVK certificate")
	arkPath := flag.String("ark", "", "ARK certificate")
	vlek := flag.Bool("vlek", false, "the leaf is a VLEK")
	n := flag.Int("n", 1, "reports to verify (the same report, as csvsm-verify --repeat)")
	mode := flag.String("mode", "attestation", "attestation or signature")
	at := flag.String("time", "", "validity time YYYY-MM-DD (default: now)")
	flag.Parse()
	if *report == "" || *vcekPath == "" || (*mode == "attestation" && (*askPath == "" || *arkPath == "")) || *n < 1 {
		flag.Usage()
		os.Exit(2)
	}
	now := time.Now()
	if *at != "" {
		t, err := time.Parse("2006-01-02", *at)
		if err != nil {
			fmt.Fprintln(os.Stderr, "verify_go_peer: -time:", err)
			os.Exit(2)
		}
		now = t
	}
	raw := must(os.ReadFile(*report))
	leaf := der(*vcekPath)

	var one func() error
	switch *mode {
	case "attestation":
		chain := &spb.CertificateChain{AskCert: der(*askPath), ArkCert: der(*arkPath)}
		if *vlek {
			chain.VlekCert = leaf
		} else {
			chain.VcekCert = leaf
		}
		opts := &verify.Options{DisableCertFetching: true, Now: now}
		one = func() error {
			// A fresh decode per report, as a service receiving bytes would.
			rep, err := abi.ReportToProto(raw)
			if err != nil {
				return err
			}
			return verify.SnpAttestation(&spb.Attestation{Report: rep, CertificateChain: chain}, opts)
		}
	case "signature":
		cert, err := x509.ParseCertificate(leaf)
		if err != nil {
			fmt.Fprintln(os.Stderr, "verify_go_peer:", err)
			os.Exit(2)
		}
		one = func() error { return verify.SnpReportSignature(raw, cert) }
	default:
		fmt.Fprintln(os.Stderr, "verify_go_peer: -mode attestation or signature")
		os.Exit(2)
	}

	if err := one(); err != nil {
		fmt.Printf("go-sev-guest %s: 1 reports, verdict %v\n", *mode, err)
		os.Exit(1)
	}
	t0 := time.Now()
	for i := 1; i < *n; i++ {
		if err := one(); err != nil {
			fmt.Printf("go-sev-guest %s: verdict changed at report %d: %v\n", *mode, i, err)
			os.Exit(1)
		}
	}
	s := time.Since(t0).Seconds()
	rate := 0.0
	if *n > 1 && s > 0 {
		rate = float64(*n-1) / s
	}
	fmt.Printf("go-sev-guest %s: %d reports, verdict ok, %.3f s, %.1f reports/s\n", *mode, *n, s, rate)
}

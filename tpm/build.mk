# tpm/: build fragment (see the variables in the top-level Makefile)

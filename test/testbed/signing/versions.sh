# shellcheck shell=bash disable=SC2034
# Versions of the signing peers (sourced). Both come from the Go module proxy:
# zot is not served by it (403), go-containerregistry's registry is, and it
# answers the OCI 1.1 referrers API.
COSIGN_VERSION=v3.1.3
GGCR_VERSION=v0.20.7

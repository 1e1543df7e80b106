module testbed.local/referrers-registry

go 1.26.0

require github.com/google/go-containerregistry v0.20.7

# Versions of the Kubernetes peer (sourced). Pinned exactly: the filtering Go
# module proxy here serves only some versions and its @latest is empty. The
# etcd and Kubernetes versions must match go/etcd/go.mod and go/kube/go.mod.
K8S_VERSION=v1.35.8
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
HELM_VERSION=v4.3.1

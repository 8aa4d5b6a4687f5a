# SPDX-License-Identifier: Apache-2.0
#
# The operator image: the static binaries that `make build` wrote
# (CGO_ENABLED=0), alone in an empty image: bin/manager, the operator, and
# bin/pfs-device-plugin, the kubelet device plugin the chart runs as a
# DaemonSet when devicePlugin.enabled (docs/guides/device-plugin.md), and
# bin/pfs-csi-node, the CSI node plugin that gives pods their namespace's blob
# socket directory (csi.enabled, docs/guides/csi.md). Nothing is compiled or
# downloaded here, so it builds offline:
#   make build && docker build -t packetfs.io/operator:v0.1.0 .
# (or buildah bud / podman build). .dockerignore sends only those three files.
# The manager reaches the apiserver with the in-cluster service-account CA, so
# the image needs no CA bundle, shell or libc.
FROM scratch
COPY bin/manager /manager
COPY bin/pfs-device-plugin /pfs-device-plugin
COPY bin/pfs-csi-node /pfs-csi-node
# 65532 is "nonroot" in distroless images; the Helm chart runs the manager as
# it too. The device plugin's and the CSI plugin's DaemonSets override it
# with uid 0 (the kubelet's directories are root's; the CSI plugin mounts).
USER 65532:65532
ENTRYPOINT ["/manager"]

# SPDX-License-Identifier: Apache-2.0
#
# The operator image: the static manager binary that `make build` wrote to
# bin/manager (CGO_ENABLED=0), alone in an empty image. Nothing is compiled or
# downloaded here, so it builds offline:
#   make build && docker build -t packetfs.io/operator:v0.1.0 .
# (or buildah bud / podman build). .dockerignore sends only bin/manager.
# The manager reaches the apiserver with the in-cluster service-account CA, so
# the image needs no CA bundle, shell or libc.
FROM scratch
COPY bin/manager /manager
# 65532 is "nonroot" in distroless images; the Helm chart runs the pod as it too.
USER 65532:65532
ENTRYPOINT ["/manager"]

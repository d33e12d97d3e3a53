# syntax=docker/dockerfile:1
# krply's image: one static binary, /kubectl-krply (the entrypoint), which
# is the recorder (`kubectl-krply record`, as the manifests under deploy/
# run it) and the command-line tool (`kubectl exec ... -- /kubectl-krply
# history deploy/web -n shop`), on a distroless base, as user 65532
# (non-root), for a read-only root filesystem (the manifests mount the
# journal volume and an emptyDir at /tmp). Build from the repository root:
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t krply:dev .
#
# The bases are named by ARGs. Pin them by digest for a reproducible build:
# resolve the digests where a registry is reachable and pass them,
#
#   docker buildx imagetools inspect golang:1.26 --format '{{.Manifest.Digest}}'
#   docker buildx imagetools inspect gcr.io/distroless/static-debian12:nonroot --format '{{.Manifest.Digest}}'
#   docker build --build-arg GO_IMAGE=golang:1.26@sha256:<digest> \
#     --build-arg BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot@sha256:<digest> ...
#
# (or write them into the defaults below). The defaults name tags only: the
# digests could not be resolved where this file was written, and a digest
# copied unverified would pin nothing anyone checked.
ARG GO_IMAGE=golang:1.26
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS build
WORKDIR /src
# The whole tree: the plugin's module resolves the krply modules it requires
# through the repository's go.work, which names every module's folder.
COPY . .
RUN cd cmd/kubectl-krply && go mod download
ARG VERSION=dev
RUN VERSION=${VERSION} hack/image-binaries.sh /out

FROM ${BASE_IMAGE}
# make release writes these build arguments for a release (dist/image-build-args).
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="krply" \
      org.opencontainers.image.description="A gap-aware history of Kubernetes objects: the recorder, query API, web UI and command-line tool" \
      org.opencontainers.image.source="https://github.com/krply/krply" \
      org.opencontainers.image.url="https://github.com/krply/krply" \
      org.opencontainers.image.documentation="https://github.com/krply/krply/tree/main/docs" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
COPY --from=build /out/ /
USER 65532:65532
ENTRYPOINT ["/kubectl-krply"]

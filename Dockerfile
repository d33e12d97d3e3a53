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
COPY go.mod go.sum ./
COPY cmd/kubectl-krply/go.mod cmd/kubectl-krply/go.sum cmd/kubectl-krply/
COPY storage/postgres/go.mod storage/postgres/go.sum storage/postgres/
RUN go mod download && cd cmd/kubectl-krply && go mod download
COPY . .
ARG VERSION=dev
RUN VERSION=${VERSION} hack/image-binaries.sh /out

FROM ${BASE_IMAGE}
COPY --from=build /out/ /
USER 65532:65532
ENTRYPOINT ["/kubectl-krply"]

# haproxy-k8s-sync: one image for every mode. Swapping the image of an
# existing Deployment is enough: the entrypoint is the binary, `run` the
# default command.
#
# The controller validates every config with `haproxy -c` before a reload
# (Services with an HAProxy sidecar), so the final stage is HAProxy's
# official image (non-root user haproxy, uid 99), plus our static binary.
# The Data Plane API mode does not need HAProxy in the image: `make image`
# builds that smaller, scratch-based variant without a container daemon.
ARG GO_VERSION=1.26
ARG HAPROXY_VERSION=2.6

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY internal ./internal
ARG VERSION=dev
# The same command as `make build-static` (test/e2e/image_test.go checks it).
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli.Version=${VERSION}" -o /out/haproxy-k8s-sync ./cmd/haproxy-k8s-sync

FROM haproxy:${HAPROXY_VERSION}
COPY --from=build /out/haproxy-k8s-sync /usr/local/bin/haproxy-k8s-sync
USER 99:99
ENTRYPOINT ["haproxy-k8s-sync"]
CMD ["run"]

# Multi-stage build: static binaries (no cgo) on a distroless base, run as non-root.
#   docker build --target shop -t seckill-shop .
#   docker build --target loadtest -t seckill-loadtest .
# GO_IMAGE and BASE_IMAGE name the images it builds from (make test-compose sets them to stand-ins
# built here: docs/operations.md).
ARG GO_IMAGE=golang:1.26
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot
FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The Go build cache outlives the image (BuildKit's cache mount): a rebuild after a change of the
# source compiles what changed, not the whole module graph.
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/shop ./cmd/shop && \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/loadtest ./loadtest

FROM ${BASE_IMAGE} AS loadtest
COPY --from=build /out/loadtest /loadtest
USER nonroot:nonroot
ENTRYPOINT ["/loadtest"]

FROM ${BASE_IMAGE} AS shop
# the release: internal/buildinfo.Version, the chart's appVersion (TestTheVersionIsOneEverywhere)
LABEL org.opencontainers.image.title="seckill-zk shop" org.opencontainers.image.version="0.11.0" org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/shop /shop
COPY config.yaml /config.yaml
ENV SHOP_CONFIG=/config.yaml SHOP_SERVER_ADDR=0.0.0.0:8080
EXPOSE 8080
USER nonroot:nonroot
HEALTHCHECK --interval=5s --timeout=3s --retries=20 CMD ["/shop", "probe", "http://127.0.0.1:8080/readyz"]
ENTRYPOINT ["/shop"]
CMD ["serve"]

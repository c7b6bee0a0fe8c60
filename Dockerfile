# Multi-stage build of the shop: a static binary on a distroless base, non-root.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/shop ./cmd/shop

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/shop /shop
COPY config.yaml /config.yaml
ENV SHOP_CONFIG=/config.yaml SHOP_SERVER_ADDR=0.0.0.0:8080
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/shop"]
CMD ["serve"]

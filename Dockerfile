# syntax=docker/dockerfile:1
# One image for docker-compose.yml: wheelhouse and nats-server, both built
# from this checkout's go.mod (the nats-server the tests run).
FROM golang:1.26 AS build
WORKDIR /src
# Modules first: this layer is only rebuilt when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-X main.Version=${VERSION}" -o /out/wheelhouse ./cmd/wheelhouse && \
    CGO_ENABLED=0 go build -trimpath -o /out/nats-server github.com/nats-io/nats-server/v2

FROM debian:12-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/* && \
    useradd --system --uid 10001 --create-home wheelhouse && \
    mkdir -p /data /secrets /etc/nats/secrets /home/wheelhouse/.config/wheelhouse && \
    chown wheelhouse: /data /secrets /etc/nats/secrets /home/wheelhouse/.config/wheelhouse
COPY --from=build /out/wheelhouse /out/nats-server /usr/local/bin/
USER wheelhouse
EXPOSE 8080
ENTRYPOINT []
CMD ["wheelhouse", "--help"]

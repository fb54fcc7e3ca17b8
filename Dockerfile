FROM golang:1.26 AS build
WORKDIR /src
COPY . .
RUN CGO_ENABLED=0 go build -o /wheelhouse ./cmd/wheelhouse

FROM debian:12-slim
COPY --from=build /wheelhouse /usr/local/bin/wheelhouse
ENTRYPOINT []

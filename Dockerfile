# crab as a container image: one static binary on an empty base image.
#
#   docker build -t crab:dev .
#   docker run --rm crab:dev --version
#
# The manifests in deploy/k8s run this image as `crab`; docs/scale.md shows
# how to push it where a cluster can pull it.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The build stamps the commit into `crab --version` (and so into every
# run's manifest.json) from the copied .git; git refuses a repository owned
# by another user unless told it is safe.
RUN git config --global --add safe.directory /src
# No cgo: the binary needs no C library, so it runs on scratch.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/crab . \
    && /out/crab --version

FROM scratch
# CA certificates, for OpenAI-compatible backends over HTTPS.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/crab /crab
# Not root: the manifests also set runAsNonRoot and this user id.
USER 65532:65532
ENTRYPOINT ["/crab"]

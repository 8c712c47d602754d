# The opencrane image: one small non-root image with the binary (both roles, migrate, deploy),
# the browser bundle and the charts. Build from the repository root:
#   docker build -t ghcr.io/opencrane/opencrane:0.1.0 .
# It runs the same build the tests exercise: `cargo xtask build --release`.

FROM rust:1.95-bookworm AS build
# npm for binaryen's wasm-opt, which shrinks the release bundle (xtask installs it under target/tools).
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# rust-toolchain.toml pins the toolchain and the wasm target; xtask installs the matching
# wasm-bindgen CLI, builds the site into target/site-release (wasm-opt -Oz, gzip copies beside
# each bundle file), then the release binary.
RUN cargo xtask build --release \
 && install -D target/release/opencrane /out/opencrane \
 && cp -r target/site-release /out/site \
 && cp -r charts /out/charts \
 && rm -rf /out/charts/tests

# helm and kubectl for the fleet's provisioning (the same `deploy` code path as the CLI).
FROM alpine/helm:3.17.3 AS helm
FROM registry.k8s.io/kubectl:v1.32.3 AS kubectl

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/opencrane /usr/local/bin/opencrane
COPY --from=build /out/site /opt/opencrane/site
COPY --from=build /out/charts /opt/opencrane/charts
COPY --from=helm /usr/bin/helm /usr/local/bin/helm
COPY --from=kubectl /bin/kubectl /usr/local/bin/kubectl
# glibc's malloc without fastbins: their consolidation on every larger allocation cost the
# customers page ~10 % of its server CPU; and per-thread caches of small chunks only (up to 128
# bytes): larger cached chunks, spread over the heap, kept a silo ~0.7 MiB above its idle size
# after a load (README, "Changes measured by hand"). `cargo xtask bench` and `cargo xtask
# link-order` run the server with the value set here.
ENV LEPTOS_SITE_ROOT=/opt/opencrane/site \
    OPENCRANE_CHARTS_DIR=/opt/opencrane/charts \
    OPENCRANE_LOG_FORMAT=json \
    GLIBC_TUNABLES=glibc.malloc.mxfast=0:glibc.malloc.tcache_max=128 \
    HOME=/tmp
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/opencrane"]
CMD ["--help"]

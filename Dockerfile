# syntax=docker/dockerfile:1
#
# indexq in a container: a static (musl) binary on distroless, running as a
# non-root user, with the ledger in a volume.
#
#   docker build -t indexq .
#   docker run --rm indexq --version
#
#   docker volume create indexq-ledger
#   docker run --rm \
#     -v indexq-ledger:/var/lib/indexq \
#     -v "$PWD/indexq.toml:/etc/indexq/config.toml:ro" \
#     -e INDEXNOW_KEY \
#     indexq -q submit
#
# With no input, `submit` reads every property's `sources` (`indexq init` puts
# the site's sitemap.xml there), sends what is new or changed, then what waits
# in the queue: run that line every hour (cron, a systemd timer, a scheduled
# job) and nothing else. `docker stop` mid-run is a clean stop (exit 143) if it
# waits longer than [submit] stop_grace (10s, docker's own default): `-t 30`.
#
# Paths in the image:
#   /usr/bin/indexq             the binary (the entrypoint)
#   /etc/indexq/config.toml     the configuration ($INDEXQ_CONFIG): mount yours there,
#                               read-only; relative paths in it (key_file, credentials)
#                               are relative to /etc/indexq
#   /var/lib/indexq/ledger.db   the ledger ($INDEXQ_LEDGER), in the volume /var/lib/indexq,
#                               owned by the image's user (65532, distroless's `nonroot`);
#                               a bind mount there must be writable by uid 65532
# With --read-only, add --tmpfs /tmp: runs keep temporary databases there.
# Secrets come from the environment (-e INDEXNOW_KEY, -e BING_WEBMASTER_API_KEY) or
# from files mounted beside the configuration. CA roots are in the image (and
# indexq carries Mozilla's own). No shell: `docker run --rm indexq man`,
# `indexq status`, ... are indexq's commands.

ARG RUST_VERSION=1

FROM rust:${RUST_VERSION}-alpine AS build
# Alpine's Rust targets musl and links statically; ring and the bundled
# SQLite are C, compiled with musl's headers.
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY Cargo.toml Cargo.lock config.example.toml ./
COPY src ./src
# The registry and target directories are build caches, not layers: a rebuild
# after a code change recompiles only indexq.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
    && install -D -m 0755 target/release/indexq /out/usr/bin/indexq \
    && strip /out/usr/bin/indexq \
    && install -d -m 0755 /out/etc/indexq
# The ledger's directory; and /tmp, where SQLite keeps a run's private
# temporary databases (results, a dry run's copy) and sitemap downloads go.
RUN install -d -m 0700 /ledger \
    && install -d -m 1777 /out/tmp

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /
COPY --from=build --chown=65532:65532 /ledger /var/lib/indexq
ENV INDEXQ_CONFIG=/etc/indexq/config.toml \
    INDEXQ_LEDGER=/var/lib/indexq/ledger.db
VOLUME ["/var/lib/indexq"]
USER 65532:65532
ENTRYPOINT ["/usr/bin/indexq"]
CMD ["--help"]

#!/usr/bin/env bash
# The action's first step (action.yml): puts indexq on PATH and sets
# INDEXQ_CONFIG and INDEXQ_LEDGER for the rest of the job.
#
# By default it downloads the release archive for the runner
# (indexq-TARGET.tar.gz, .zip on Windows) and the release's SHA256SUMS from
# $INDEXQ_RELEASE_URL, else from the GitHub release v$VERSION of the
# repository that package.repository in the action's Cargo.toml names, and
# refuses an archive whose SHA-256 is not the one listed. VERSION is
# $INDEXQ_VERSION, else the action's own (Cargo.toml's version).
# With INDEXQ_FROM_SOURCE=true it builds the action's source with cargo.
#
# Reads: GITHUB_ACTION_PATH, RUNNER_OS, RUNNER_ARCH, RUNNER_TEMP,
# GITHUB_WORKSPACE, GITHUB_PATH, GITHUB_ENV, GITHUB_OUTPUT, and the
# INDEXQ_* variables that action.yml sets from its inputs.
set -euo pipefail

fail() { echo "::error title=indexq::$*"; exit 1; }

action_dir="${GITHUB_ACTION_PATH:?}"
manifest="$action_dir/Cargo.toml"
# A [package] field of the action's Cargo.toml (the first `name = "value"` line).
field() { sed -n "s/^$1 = \"\(.*\)\"\$/\1/p" "$manifest" | head -n 1; }

install_root="${RUNNER_TEMP:?}/indexq"
bin_dir="$install_root/bin"
mkdir -p "$bin_dir"

if [[ "${INDEXQ_FROM_SOURCE:-false}" == true ]]; then
    command -v cargo >/dev/null || fail "from-source: true needs Rust (cargo) on the runner"
    echo "Building indexq from $action_dir"
    cargo install --locked --path "$action_dir" --root "$install_root"
else
    version="${INDEXQ_VERSION:-$(field version)}"
    version="${version#v}"
    base="${INDEXQ_RELEASE_URL:-}"
    if [[ -z "$base" ]]; then
        repository="$(field repository)"
        case "$repository" in
            "" | */OWNER/*)
                fail "the action's Cargo.toml names no repository to download from (package.repository = \"$repository\"): set it, or set the release-url or from-source input" ;;
        esac
        base="${repository%/}/releases/download/v$version"
    fi
    case "${RUNNER_OS:?}/${RUNNER_ARCH:?}" in
        Linux/X64) target=x86_64-unknown-linux-musl ;;
        Linux/ARM64) target=aarch64-unknown-linux-musl ;;
        macOS/X64) target=x86_64-apple-darwin ;;
        macOS/ARM64) target=aarch64-apple-darwin ;;
        Windows/X64) target=x86_64-pc-windows-msvc ;;
        *) fail "no release binary for $RUNNER_OS/$RUNNER_ARCH: set from-source: true" ;;
    esac
    archive="indexq-$target.tar.gz"
    [[ "$RUNNER_OS" == Windows ]] && archive="indexq-$target.zip"

    download="$(mktemp -d "$RUNNER_TEMP/indexq-download.XXXXXX")"
    for file in "$archive" SHA256SUMS; do
        echo "Downloading ${base%/}/$file"
        curl --fail --silent --show-error --location --retry 3 --output "$download/$file" "${base%/}/$file" ||
            fail "cannot download ${base%/}/$file (is there a release v$version? the version input picks another)"
    done
    # A line of `sha256sum` output: HASH, two spaces (or " *"), the file name.
    expected="$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$download/SHA256SUMS")"
    [[ -n "$expected" ]] || fail "SHA256SUMS of the release lists no $archive"
    if command -v sha256sum >/dev/null; then
        actual="$(sha256sum "$download/$archive" | cut -d ' ' -f 1)"
    else
        actual="$(shasum -a 256 "$download/$archive" | cut -d ' ' -f 1)"
    fi
    # (tr, not ${x,,}: macOS's /bin/bash is 3.2)
    lower() { tr '[:upper:]' '[:lower:]' <<<"$1"; }
    [[ "$(lower "$actual")" == "$(lower "$expected")" ]] ||
        fail "$archive does not match the release's SHA256SUMS (expected $expected, got $actual): not installed"
    echo "$archive: SHA-256 $actual, as listed in SHA256SUMS"
    if [[ "$archive" == *.zip ]]; then
        unzip -o -q "$download/$archive" indexq.exe -d "$bin_dir"
    else
        tar -xzf "$download/$archive" -C "$bin_dir" indexq
    fi
    rm -rf "$download"
fi

exe="$bin_dir/indexq"
[[ -f "$exe" || -f "$exe.exe" ]] || fail "no indexq binary in $bin_dir"
"$exe" --version
echo "$bin_dir" >> "${GITHUB_PATH:?}"

# The ledger in the cached directory, and the configuration, for this and later steps.
ledger_dir="${INDEXQ_LEDGER_DIR:-.indexq}"
[[ "$ledger_dir" == /* ]] || ledger_dir="${GITHUB_WORKSPACE:?}/$ledger_dir"
mkdir -p "$ledger_dir"
{
    echo "INDEXQ_LEDGER=$ledger_dir/ledger.db"
    if [[ -n "${INDEXQ_CONFIG_INPUT:-}" ]]; then
        config="$INDEXQ_CONFIG_INPUT"
        [[ "$config" == /* ]] || config="$GITHUB_WORKSPACE/$config"
        echo "INDEXQ_CONFIG=$config"
    fi
} >> "${GITHUB_ENV:?}"
echo "ledger=$ledger_dir/ledger.db" >> "${GITHUB_OUTPUT:?}"

#!/usr/bin/env bash
# The action's submission step (action.yml): runs `indexq submit` with the
# action's inputs, the keys exported from the secrets given, and records
# indexq's exit code as the step output `exit-code` instead of failing, so
# that the next step saves the ledger first; the action's last step fails
# with that code.
#
# Reads the INDEXQ_* variables that action.yml sets from its inputs, and
# RUNNER_TEMP and GITHUB_OUTPUT.
set -euo pipefail

lines() { # the non-blank lines of $1, trimmed, one per output line
    local line
    while IFS= read -r line; do
        line="${line#"${line%%[![:space:]]*}"}"
        line="${line%"${line##*[![:space:]]}"}"
        [[ -n "$line" ]] && printf '%s\n' "$line"
    done <<<"$1"
}

args=(submit)
while IFS= read -r sitemap; do
    args+=(--sitemap "$sitemap")
done < <(lines "${INDEXQ_SITEMAP:-}")
[[ "${INDEXQ_CHANGED:-false}" == true ]] && args+=(--changed)
[[ -n "${INDEXQ_MAX_WAIT:-}" ]] && args+=(--max-wait "$INDEXQ_MAX_WAIT")
[[ -n "${INDEXQ_FAIL_ON:-}" ]] && args+=(--fail-on "$INDEXQ_FAIL_ON")
if [[ -n "${INDEXQ_ARGS:-}" ]]; then
    read -r -a extra <<<"$INDEXQ_ARGS"
    args+=("${extra[@]}")
fi
while IFS= read -r list; do
    args+=("$list")
done < <(lines "${INDEXQ_URLS:-}")

# Keys from the secrets given; a key not given leaves the job's own variable alone.
[[ -n "${INDEXQ_IN_INDEXNOW_KEY:-}" ]] && export INDEXNOW_KEY="$INDEXQ_IN_INDEXNOW_KEY"
[[ -n "${INDEXQ_IN_BING_API_KEY:-}" ]] && export BING_WEBMASTER_API_KEY="$INDEXQ_IN_BING_API_KEY"
unset INDEXQ_IN_INDEXNOW_KEY INDEXQ_IN_BING_API_KEY
if [[ -n "${INDEXQ_IN_GOOGLE_SERVICE_ACCOUNT:-}" ]]; then
    credentials="$(umask 077 && mktemp "${RUNNER_TEMP:?}/indexq-google.XXXXXX")"
    trap 'rm -f "$credentials"' EXIT
    printf '%s' "$INDEXQ_IN_GOOGLE_SERVICE_ACCOUNT" >"$credentials"
    export GOOGLE_APPLICATION_CREDENTIALS="$credentials"
fi
unset INDEXQ_IN_GOOGLE_SERVICE_ACCOUNT

echo "indexq ${args[*]}"
code=0
indexq "${args[@]}" || code=$?
echo "exit-code=$code" >>"${GITHUB_OUTPUT:?}"

#!/usr/bin/env bash
# The action's submission step (action.yml): runs `indexq submit` with the
# action's inputs, the keys exported from the secrets given, and records
# indexq's exit code as the step output `exit-code` instead of failing, so
# that the next step saves the ledger first; the action's last step fails
# with that code.
#
# Reads the INDEXQ_* variables that action.yml sets from its inputs, and
# RUNNER_TEMP and GITHUB_OUTPUT. With INDEXQ_SERVE_URL (the input serve-url)
# it asks that `indexq serve` to read its sources instead (below).
set -euo pipefail

lines() { # the non-blank lines of $1, trimmed, one per output line
    local line
    while IFS= read -r line; do
        line="${line#"${line%%[![:space:]]*}"}"
        line="${line%"${line##*[![:space:]]}"}"
        [[ -n "$line" ]] && printf '%s\n' "$line"
    done <<<"$1"
}

# The serve mode (inputs serve-url and serve-token): a running `indexq serve`
# keeps the site's one ledger, and is asked to read its configured sources
# now (POST /v1/sources), instead of a submission from the cached ledger,
# which would send every change a second time. The token goes to curl
# through a file descriptor, never on a command line, and is never printed
# (GitHub masks it too, as a secret).
if [[ -n "${INDEXQ_SERVE_URL:-}" ]]; then
    token="${INDEXQ_IN_SERVE_TOKEN:-}"
    unset INDEXQ_IN_SERVE_TOKEN
    code=0
    if [[ -z "$token" ]]; then
        echo "::error title=indexq::serve-url is given without serve-token (the [[serve.token]] of the server)"
        code=2
    elif [[ -n "${INDEXQ_SITEMAP:-}${INDEXQ_URLS:-}" ]]; then
        echo "::error title=indexq::with serve-url, the server reads its own configured sources: give no sitemap or urls"
        code=2
    else
        url="${INDEXQ_SERVE_URL%/}/v1/sources"
        body="$(mktemp "${RUNNER_TEMP:?}/indexq-serve.XXXXXX")"
        echo "POST $url"
        status="$(curl -sS -o "$body" -w '%{http_code}' -X POST --max-time 300 \
            -H @<(printf 'Authorization: Bearer %s\n' "$token") "$url")" || status=000
        cat "$body" && echo
        rm -f "$body"
        case "$status" in
            202) ;;
            # The token, its properties or the address: a human must fix the inputs.
            401 | 403 | 404 | 422) code=2 ;;
            *) code=1 ;;
        esac
        [[ "$status" == 202 ]] || echo "::error title=indexq::indexq serve answered $status to POST /v1/sources"
    fi
    echo "exit-code=$code" >>"${GITHUB_OUTPUT:?}"
    exit 0
fi

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

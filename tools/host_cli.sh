#!/bin/sh
# Install one pinned host CLI from npm into .ci-cache/<name> (once: reused while the
# recorded package matches). Used by the gemini-cli / codex-cli tox envs and .ci/run, so
# `tox run-parallel -m test` works on a fresh machine with Node and npm.
#   tools/host_cli.sh gemini | codex
set -eu
cd "$(dirname "$0")/.."
case "$1" in
    gemini) want="@google/gemini-cli@0.61.0" ;;
    codex) want="@openai/codex@0.169.0" ;;
    *) echo "usage: $0 gemini|codex" >&2; exit 2 ;;
esac
prefix=".ci-cache/$1"
# --prefix also moves npm's global config (the registry's CA file may be set there):
# keep the machine's own
globalconfig=$(npm config get globalconfig)
if [ "$(cat "$prefix/.installed" 2>/dev/null)" != "$want" ]; then
    rm -rf "$prefix" && mkdir -p "$prefix"
    npm install --prefix "$prefix" --globalconfig "$globalconfig" --no-audit --no-fund --loglevel=error "$want"
    printf '%s' "$want" > "$prefix/.installed"
fi
"$prefix/node_modules/.bin/$1" --version

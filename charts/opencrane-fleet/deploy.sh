#!/usr/bin/env sh
# Installs the OpenCrane fleet release: a thin wrapper around `opencrane deploy fleet` (run it
# with --help for every flag). The opencrane binary comes from $OPENCRANE_BIN or PATH; the
# charts are the ones next to this script.
set -eu
here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
bin=${OPENCRANE_BIN:-opencrane}
if ! command -v "$bin" >/dev/null 2>&1; then
  echo "opencrane not found: put it on PATH or set OPENCRANE_BIN (cargo build --release -p opencrane builds it)" >&2
  exit 127
fi
exec "$bin" deploy fleet --charts "$here/.." "$@"

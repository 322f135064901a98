#!/usr/bin/env bash
# Configures and builds attune into build/ (or $ATTUNE_BUILD_DIR) with two jobs.
# demo.sh and test.sh both come through here with the same configuration, so the second reuses
# the first's build (warnings are errors unless ATTUNE_WERROR=OFF).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${ATTUNE_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTUNE_WERROR="${ATTUNE_WERROR:-ON}" "$@" >/dev/null
cmake --build "$build_dir" -j2

#!/usr/bin/env bash
# Installs what the tests need, builds attune and runs the whole suite with ctest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${ATTUNE_BUILD_DIR:-$root/build}"
"$root/scripts/setup-deps.sh"
"$root/scripts/build.sh"
cd "$build_dir"
ctest --output-on-failure -j2 --timeout 600

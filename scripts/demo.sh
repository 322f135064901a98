#!/usr/bin/env bash
# Installs what attune needs, builds it, and runs the main job on the examples.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${ATTUNE_BUILD_DIR:-$root/build}"
"$root/scripts/setup-deps.sh"
"$root/scripts/build.sh" >/dev/null
attune="$build_dir/attune"
cd "$root"

recipe=examples/recipes/nemo-llama3-8b-h100.yaml
echo "== attune gate check: an edit that keeps the objective (exit 0)"
"$attune" gate check "$recipe" examples/edits/less-model-parallelism.overrides
echo
echo "== attune gate check: an edit that changes the global batch (exit 3)"
status=0
"$attune" gate check "$recipe" examples/edits/bigger-global-batch.overrides || status=$?
echo "exit code: $status"
[ "$status" -eq 3 ]

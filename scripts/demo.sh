#!/usr/bin/env bash
# Installs what attune needs, builds it, and runs the main job: a whole tuning campaign on the
# embedded simulated cluster (8 nodes x 8 H100), then shows that the gate accepts its result.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${ATTUNE_BUILD_DIR:-$root/build}"
"$root/scripts/setup-deps.sh"
"$root/scripts/build.sh" >/dev/null
attune="$build_dir/attune"
cd "$root"

recipe=examples/recipes/nemo-llama3-8b-h100.yaml
campaign="attune-campaigns/demo-$(date +%Y%m%d-%H%M%S)"
echo "== attune tune $recipe --budget 200gpuh (simulated cluster)"
"$attune" tune "$recipe" --budget 200gpuh --campaign "$campaign"
echo
echo "== attune gate check: the tuned recipe trains exactly what the original does"
"$attune" gate check "$recipe" "$campaign/best.yaml" | tail -n 3

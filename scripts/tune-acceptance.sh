#!/usr/bin/env bash
# Prints the acceptance table of docs/campaign.md: each example recipe tuned on the simulated
# cluster with 200 GPU-h, against `attune sim oracle` on the same cluster. Needs python3.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
attune="${ATTUNE_BUILD_DIR:-$root/build}/attune"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$root"
echo "| recipe | cluster | baseline tok/s/GPU | tuned | oracle | tuned/oracle | GPU-h spent of 200 | launched | failed | refused | stopped because |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for spec in nemo-llama3-8b-h100.yaml: nemo-llama3-70b-h100.yaml: nemo-mixtral-8x7b-h100.yaml: \
            nemo-llama3-8b-h100.yaml:p5e-h200.yaml nemo-llama3-70b-h100.yaml:p6-b200.yaml \
            hyperpod-llama3-8b-h100.yaml: automodel-llama3-8b-h100.yaml:; do
    recipe="examples/recipes/${spec%%:*}"
    cluster="${spec#*:}"
    args=()
    [ -n "$cluster" ] && args=(--cluster "examples/clusters/$cluster")
    campaign="$work/$(basename "$recipe" .yaml)-${cluster:-default}"
    "$attune" -q tune "$recipe" --budget 200gpuh "${args[@]}" --campaign "$campaign" --json > "$campaign.json"
    "$attune" sim oracle "$recipe" "${args[@]}" --json > "$campaign.oracle.json"
    python3 - "$recipe" "${cluster:-default (8x8 H100)}" "$campaign.json" "$campaign.oracle.json" <<'EOF'
import json, sys
recipe, cluster, tuned, oracle = sys.argv[1:]
t, o = json.load(open(tuned)), json.load(open(oracle))
best = t["best"].get("tokens_per_s_per_gpu") or 0
ceiling = o["best"]["tokens_per_s_per_gpu"]
base = t["baseline"].get("tokens_per_s_per_gpu") or 0
print(f"| {recipe.split('/')[-1]} | {cluster} | {base:.0f} | {best:.0f} | {ceiling:.0f} | {best / ceiling:.2f} | "
      f"{t['gpu_hours_spent']:.1f} | {t['launched']} | {t['failed']} | {t['refused']} | {t['stop_reason']} |")
EOF
done

#!/usr/bin/env bash
# Prints the lessons table of docs/campaign.md ("Lessons"): for each sibling pair, the first recipe is
# tuned (campaign seed 1, --no-lessons) and `attune lessons` writes what it learned; the second recipe
# is then benched on the same simulated cluster (the same hidden world) with those lessons and
# without, five campaign seeds each. Then one pair with a misleading lesson: a campaign of an
# unrelated model on another GPU, its file relabelled as the sibling's family so that it is read.
# Needs python3.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
attune="${ATTUNE_BUILD_DIR:-$root/build}/attune"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$root"
world=20240611
seeds="${LESSONS_SEEDS:-5}"

# Variants of the example recipes: another node count, another model of the family.
sed 's/^  num_nodes: 8$/  num_nodes: 2/' examples/recipes/nemo-llama3-8b-h100.yaml > "$work/nemo-llama3-8b-h100-2nodes.yaml"
sed 's/^  num_nodes: 8$/  num_nodes: 16/' examples/recipes/nemo-llama3-8b-h100.yaml > "$work/nemo-llama3-8b-h100-16nodes.yaml"
sed 's/^gpu: h200$/gpu: b200/; s/^name: .*/name: p6-b200-4nodes/' examples/bench/clusters/p5e-h200-4nodes.yaml > "$work/p6-b200-4nodes.yaml"
sed 's/^gpu: h200$/gpu: h100/; s/^name: .*/name: p5-h100-2nodes/' examples/bench/clusters/p5e-h200-2nodes.yaml > "$work/p5-h100-2nodes.yaml"

# name | first recipe | its cluster | second recipe | its cluster
pairs=(
  "llama3 8b then 70b, 64 H100|examples/recipes/nemo-llama3-8b-h100.yaml|examples/clusters/p5-h100.yaml|examples/recipes/nemo-llama3-70b-h100.yaml|examples/clusters/p5-h100.yaml"
  "llama3 8b on 2 then 16 nodes of H100|$work/nemo-llama3-8b-h100-2nodes.yaml|examples/bench/clusters/p5-h100-16nodes.yaml|$work/nemo-llama3-8b-h100-16nodes.yaml|examples/bench/clusters/p5-h100-16nodes.yaml"
  "mixtral 8x7b draft on H200 then B200|examples/bench/nemo-mixtral-8x7b-h200-draft.yaml|examples/bench/clusters/p5e-h200-4nodes.yaml|examples/bench/nemo-mixtral-8x7b-h200-draft.yaml|$work/p6-b200-4nodes.yaml"
  "mixtral 8x7b draft on H200 then H100|examples/bench/nemo-mixtral-8x7b-h200-draft.yaml|examples/bench/clusters/p5e-h200-4nodes.yaml|examples/recipes/nemo-mixtral-8x7b-h100.yaml|examples/clusters/p5-h100.yaml"
  "qwen3-30b-a3b draft on H200 then H100|examples/bench/nemo-qwen3-30b-a3b-h200-draft.yaml|examples/bench/clusters/p5e-h200-2nodes.yaml|examples/bench/nemo-qwen3-30b-a3b-h200-draft.yaml|$work/p5-h100-2nodes.yaml"
  "llama3 70b then llama3.1 405b, h100 recipes on B200|examples/bench/nemo-llama3-70b-h100-recipe-on-b200.yaml|examples/clusters/p6-b200.yaml|examples/bench/nemo-llama31-405b-h100-recipe-on-b200.yaml|examples/bench/clusters/p6-b200-16nodes.yaml"
)

# bench ROW_NAME RECIPE CLUSTER OUT [--lessons DIR | --no-lessons]
bench() {
  local dir="$work/suite-$RANDOM$RANDOM"
  mkdir -p "$dir"
  printf -- '- {recipe: %s, cluster: %s, name: "%s"}\n' "$(realpath "$2")" "$(realpath "$3")" "$1" > "$dir/suite.yaml"
  "$attune" -q bench --suite "$dir" --policies rules --seeds "$seeds" --world-seeds "$world" "${@:5}" --json > "$4"
}

echo "| pair | GPU-h to 95% of oracle, no lessons | with lessons | fewer | of oracle, no lessons | with lessons | trials, no lessons | with lessons |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
i=0
for pair in "${pairs[@]}"; do
  IFS='|' read -r name first first_cluster second second_cluster <<< "$pair"
  i=$((i + 1))
  "$attune" -q tune "$first" --cluster "$first_cluster" --budget 200gpuh --world-seed "$world" --no-lessons \
    --campaign "$work/first-$i" --json > /dev/null
  mkdir -p "$work/lessons-$i"
  "$attune" lessons "$work/first-$i" -o "$work/lessons-$i/first-$i.md"
  bench "$name" "$second" "$second_cluster" "$work/without-$i.json" --no-lessons
  bench "$name" "$second" "$second_cluster" "$work/with-$i.json" --lessons "$work/lessons-$i"
  python3 - "$name" "$work/without-$i.json" "$work/with-$i.json" <<'EOF'
import json, sys
name, without, with_ = sys.argv[1:]
a = json.load(open(without))["recipes"][0]["policies"]["rules"]
b = json.load(open(with_))["recipes"][0]["policies"]["rules"]
ha, hb = a["gpu_hours_to_95_of_oracle"], b["gpu_hours_to_95_of_oracle"]
print(f"| {name} | {ha:.1f} | {hb:.1f} | {100 * (1 - hb / ha):.0f}% | {a['fraction_of_oracle']:.3f} | "
      f"{b['fraction_of_oracle']:.3f} | {a['launches'] / a['runs']:.1f} | {b['launches'] / b['runs']:.1f} |")
EOF
done

# The misleading lesson: Qwen3-30B-A3B's campaign on H200, read as a lesson about Llama 3 on H100.
mkdir -p "$work/misleading"
sed 's/^model_family: .*/model_family: llama3/' "$work/lessons-5/first-5.md" > "$work/misleading/misleading.md"
bench "misleading" examples/recipes/nemo-llama3-70b-h100.yaml examples/clusters/p5-h100.yaml "$work/misleading.json" \
  --lessons "$work/misleading"
python3 - "$work/without-1.json" "$work/misleading.json" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))["recipes"][0]["policies"]["rules"]
b = json.load(open(sys.argv[2]))["recipes"][0]["policies"]["rules"]
print(f"| misleading lesson (qwen3-30b-a3b on H200, relabelled llama3) on llama3 70b, 64 H100 | "
      f"{a['gpu_hours_to_95_of_oracle']:.1f} | {b['gpu_hours_to_95_of_oracle']:.1f} | - | {a['fraction_of_oracle']:.3f} | "
      f"{b['fraction_of_oracle']:.3f} | {a['launches'] / a['runs']:.1f} | {b['launches'] / b['runs']:.1f} |")
EOF

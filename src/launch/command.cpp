#include <attune/core/error.hpp>
#include <attune/launch/command.hpp>

#include <algorithm>
#include <filesystem>

namespace attune::launch {
namespace {

std::string replaced(std::string word, std::string_view name, const std::string& value) {
    for (auto at = word.find(name); at != std::string::npos; at = word.find(name, at + value.size()))
        word.replace(at, name.size(), value);
    return word;
}

}  // namespace

std::vector<std::string> overrides_of(const gate::Verdict& verdict) {
    std::vector<std::string> out;
    for (const auto& change : verdict.changes) {
        if (!change.to) out.push_back("~" + change.key);
        else out.push_back((change.from ? "" : "+") + change.key + "=" + change.to->to_yaml());
    }
    return out;
}

std::vector<std::string> trial_command(const cluster::Cluster& cluster, const gate::GatedTrial& trial, const TrialPlan& plan) {
    if (cluster.launcher.empty())
        throw InputError("cluster '" + cluster.name + "': no launcher: the local and Slurm backends need the training command's "
                         "argv (e.g. launcher: [torchrun, --nproc-per-node=8, train.py], to which the recipe path is appended, "
                         "or a template with {recipe}, {steps} and {overrides}: docs/clusters.md)");
    std::vector<std::string> words = cluster.launcher;
    // A launch script is its own launch: it runs the training command with the trial's values written
    // in it, whatever the family passes a recipe file as.
    static const std::vector<std::string> script{"{recipe}"};
    const auto& args = trial.recipe().format() == recipe::Format::shell ? script : trial.adapter().launch_args();
    if (std::none_of(words.begin(), words.end(), cluster::has_placeholder)) words.insert(words.end(), args.begin(), args.end());
    const std::string recipe = std::filesystem::absolute(plan.recipe_file).string();
    std::vector<std::string> argv;
    for (const auto& word : words) {
        if (word == "{overrides}") {
            for (auto& override_word : overrides_of(trial.verdict())) argv.push_back(std::move(override_word));
            continue;
        }
        argv.push_back(replaced(replaced(word, "{recipe}", recipe), "{steps}", std::to_string(plan.steps)));
    }
    return argv;
}

}  // namespace attune::launch

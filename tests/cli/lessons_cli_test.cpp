// Lessons carried from one campaign to the next (skills/lessons/README.md, docs/campaign.md "Lessons").
#include "../support/run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>

namespace {

namespace fs = std::filesystem;
using attune::test_support::journal_events;
using attune::test_support::run_attune;
using attune::test_support::TempDir;
using nlohmann::json;

std::string example(const std::string& name) { return std::string(ATTUNE_SOURCE_DIR) + "/examples/" + name; }
std::string lessons_fixture(const std::string& name) { return std::string(ATTUNE_FIXTURES) + "/lessons/" + name; }

std::vector<json> of_type(const fs::path& campaign, const std::string& type) {
    std::vector<json> out;
    for (auto& e : journal_events(campaign))
        if (e["type"] == type) out.push_back(std::move(e));
    return out;
}

void tune(const std::vector<std::string>& extra, const fs::path& campaign) {
    std::vector<std::string> args{"-q", "tune", "--json", "--campaign", campaign.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = run_attune(args);
    ASSERT_EQ(result.exit_code, 0) << result.err;
}

std::string read(const fs::path& file) {
    std::ifstream in(file);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Llama 3 8B tuned on 64 H100 without lessons, and what it taught written to `dir`/llama3-8b.md.
fs::path lessons_from_8b(const TempDir& dir) {
    const auto campaign = dir.path() / "first";
    tune({example("recipes/nemo-llama3-8b-h100.yaml"), "--budget", "200gpuh", "--no-lessons"}, campaign);
    const auto lessons = dir.path() / "lessons";
    fs::create_directories(lessons);
    const auto written = run_attune({"lessons", campaign.string(), "-o", (lessons / "llama3-8b.md").string()});
    EXPECT_EQ(written.exit_code, 0) << written.err;
    return lessons;
}

TEST(TuneLessons, TheSiblingsLessonLeadsTheFirstMovesAndTheJournalReportAndReplaySayIt) {
    const TempDir dir;
    const auto lessons = lessons_from_8b(dir);
    const auto text = read(lessons / "llama3-8b.md");
    EXPECT_NE(text.find("layout: {tp: 1, nvlink_reach: 8,"), std::string::npos) << text;
    // Every flag move the 8B campaign measured and reverted is in the lesson's `hurt`.
    std::map<int, std::string> lever;
    for (const auto& e : of_type(dir.path() / "first", "trial-proposed")) lever[e["trial"].get<int>()] = e["lever"];
    int reverted = 0;
    for (const auto& e : of_type(dir.path() / "first", "decision"))
        if (e["decision"] == "revert" && lever[e["trial"].get<int>()] == "fusions") ++reverted;
    ASSERT_GE(reverted, 1) << "the 8B campaign kept every fusion: this no longer tests `hurt`";
    const auto hurt = text.find("\nhurt:\n");
    ASSERT_NE(hurt, std::string::npos) << text;
    EXPECT_NE(text.find("  - {lever: fusions, key: ", hurt), std::string::npos) << text;
    EXPECT_NE(text.find("why: reverted}", hurt), std::string::npos) << text;
    const auto campaign = dir.path() / "second";
    tune({example("recipes/nemo-llama3-70b-h100.yaml"), "--budget", "200gpuh", "--lessons", lessons.string()}, campaign);
    const auto start = of_type(campaign, "campaign-start").at(0);
    EXPECT_EQ(start["lessons"], json::array({"lessons/llama3-8b.md"}));
    EXPECT_TRUE(fs::exists(campaign / "lessons" / "llama3-8b.md"));
    const auto proposed = of_type(campaign, "trial-proposed");
    ASSERT_GE(proposed.size(), 3u);
    // The 8B campaign ended with recompute off: on the 70B it is the lesson's first step, where it fits.
    EXPECT_EQ(proposed[1].value("lesson", ""), "llama3-8b");
    EXPECT_NE(proposed[1]["rationale"].get<std::string>().find("lesson llama3-8b"), std::string::npos);
    EXPECT_NE(read(campaign / "report.md").find("llama3-8b"), std::string::npos);
    const auto replay = run_attune({"replay", campaign.string()});
    EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
    EXPECT_NE(replay.out.find("none differ"), std::string::npos) << replay.out;
}

TEST(TuneLessons, AFlagThatRanIntoItsTimeLimitHurtAndOneLostToANodeFailureTeachesNothing) {
    // The 8B campaign's reverted fusions, as if every run of one had hit its time limit (the change's
    // fault: skills/rules/search.yaml's on_failure reverts it) and every run of the other had lost its
    // node (the cluster's: it is retried, and says nothing about the move).
    const TempDir dir;
    const auto campaign = dir.path() / "c";
    tune({example("recipes/nemo-llama3-8b-h100.yaml"), "--budget", "200gpuh", "--no-lessons"}, campaign);
    std::map<int, std::string> key;
    for (const auto& e : of_type(campaign, "trial-proposed"))
        for (const auto& change : e["changes"])
            if (change["key"] == "model.persist_layer_norm" || change["key"] == "model.cross_entropy_loss_fusion")
                key[e["trial"].get<int>()] = change["key"];
    const std::map<std::string, std::string> status{{"model.persist_layer_norm", "time-limit"},
                                                    {"model.cross_entropy_loss_fusion", "node-failure"}};
    std::string journal;
    int rewritten = 0;
    for (auto e : journal_events(campaign)) {
        if (e["type"] == "metrics" && key.contains(e["trial"].get<int>()) && e["measured"]["status"] == "ok")
            e["measured"]["status"] = status.at(key.at(e["trial"].get<int>())), ++rewritten;
        journal += e.dump() + "\n";
    }
    ASSERT_GE(rewritten, 2) << "the 8B campaign no longer runs both fusions";
    std::ofstream(campaign / "journal.jsonl") << journal;
    const auto written = run_attune({"lessons", campaign.string()});
    ASSERT_EQ(written.exit_code, 0) << written.err;
    const auto hurt = written.out.find("\nhurt:\n");
    ASSERT_NE(hurt, std::string::npos) << written.out;
    const std::string front = written.out.substr(hurt, written.out.find("\n---", hurt) - hurt);
    EXPECT_NE(front.find("key: persist_layer_norm, value: true,"), std::string::npos) << written.out;
    EXPECT_NE(front.find("why: failed}"), std::string::npos) << written.out;
    EXPECT_EQ(front.find("cross_entropy_loss_fusion"), std::string::npos) << written.out;
}

TEST(TuneLessons, ACampaignKilledWhileALessonLeadsResumesToTheSameResult) {
    const TempDir dir;
    const auto lessons = lessons_from_8b(dir);
    const std::string recipe = example("recipes/nemo-llama3-70b-h100.yaml");
    const std::vector<std::string> args{"-q", "tune", recipe, "--budget", "120gpuh", "--lessons", lessons.string(), "--json"};
    auto whole_args = args;
    whole_args.insert(whole_args.end(), {"--campaign", (dir.path() / "whole").string()});
    const auto whole = run_attune(whole_args);
    ASSERT_EQ(whole.exit_code, 0) << whole.err;
    for (const int n : {7, 16, 25}) {
        const auto campaign = dir.path() / ("killed-" + std::to_string(n));
        auto killed_args = args;
        killed_args.insert(killed_args.end(), {"--campaign", campaign.string()});
        const auto killed = run_attune(killed_args, {}, {"ATTUNE_FAULT_ABORT_AFTER_EVENTS=" + std::to_string(n)});
        ASSERT_NE(killed.exit_code, 0);
        const auto resumed = run_attune({"-q", "tune", "--resume", "--campaign", campaign.string(), "--json"});
        ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
        EXPECT_EQ(json::parse(resumed.out)["best"]["edits"], json::parse(whole.out)["best"]["edits"]) << "killed after event " << n;
        EXPECT_EQ(of_type(campaign, "trial-proposed").size(), of_type(dir.path() / "whole", "trial-proposed").size());
    }
}

TEST(TuneLessons, ALessonWhoseMoveDoesNotHoldIsDroppedAfterOneTrial) {
    const TempDir dir;
    const auto campaign = dir.path() / "c";
    tune({example("recipes/nemo-llama3-8b-h100.yaml"), "--budget", "200gpuh", "--lessons", lessons_fixture("wrong-flag")}, campaign);
    std::map<int, std::string> decisions;
    for (const auto& e : of_type(campaign, "decision")) decisions[e["trial"].get<int>()] = e["decision"].get<std::string>();
    const auto proposed = of_type(campaign, "trial-proposed");
    // A lesson's move holds when it, or a run of it again (its gain was inside the noise band), is accepted.
    const auto held = [&](int n) {
        return decisions[n] == "accept" || std::any_of(proposed.begin(), proposed.end(), [&](const json& e) {
                   return e.value("repeat_of", -1) == n && decisions[e["trial"].get<int>()] == "accept";
               });
    };
    int taught = 0;
    std::optional<int> first_not_accepted;
    for (const auto& e : proposed) {
        if (e.value("lesson", "").empty() || e.contains("repeat_of")) continue;
        const int n = e["trial"].get<int>();
        ++taught;
        EXPECT_FALSE(first_not_accepted.has_value()) << "trial " << n << " follows a lesson dropped at trial " << *first_not_accepted;
        if (!held(n)) first_not_accepted = n;
    }
    EXPECT_GE(taught, 1);
    ASSERT_TRUE(first_not_accepted.has_value()) << "the fixture's flag was kept: it no longer tests dropping";
}

/// The trial that first proposed `lever` (-1: none).
int first_trial_of(const fs::path& campaign, const std::string& lever) {
    for (const auto& e : of_type(campaign, "trial-proposed"))
        if (e["lever"] == lever) return e["trial"].get<int>();
    return -1;
}

TEST(TuneLessons, AMoveTheLessonSaysHurtComesAfterTheOtherMovesButStillComes) {
    const TempDir dir;
    const std::string recipe = example("recipes/nemo-llama3-8b-h100.yaml");
    tune({recipe, "--budget", "200gpuh", "--no-lessons"}, dir.path() / "without");
    tune({recipe, "--budget", "200gpuh", "--lessons", lessons_fixture("hurt-flag")}, dir.path() / "with");
    const int without = first_trial_of(dir.path() / "without", "overlap_grad_reduce");
    const int with = first_trial_of(dir.path() / "with", "overlap_grad_reduce");
    ASSERT_GE(without, 1) << "the rules no longer take the fixture's flag: it no longer tests `hurt`";
    EXPECT_GT(with, without);
    // Before it, another move of the same kind (a flag), not only layout steps.
    EXPECT_GE(first_trial_of(dir.path() / "with", "fusions"), 1);
    EXPECT_LT(first_trial_of(dir.path() / "with", "fusions"), with);
}

TEST(TuneLessons, NoLessonsReadsNoneAndBothFlagsAreRefused) {
    const TempDir dir;
    const auto campaign = dir.path() / "c";
    tune({example("recipes/nemo-llama3-8b-h100.yaml"), "--budget", "30gpuh", "--no-lessons"}, campaign);
    EXPECT_EQ(of_type(campaign, "campaign-start").at(0)["lessons"], json::array());
    EXPECT_FALSE(fs::exists(campaign / "lessons"));
    const auto both = run_attune({"tune", example("recipes/nemo-llama3-8b-h100.yaml"), "--lessons", lessons_fixture("wrong-flag"),
                                  "--no-lessons", "--campaign", (dir.path() / "d").string()});
    EXPECT_EQ(both.exit_code, 2) << both.err;
    EXPECT_FALSE(fs::exists(dir.path() / "d"));
}

TEST(TuneLessons, AMalformedLessonsFileIsNamedWithItsLineAndNothingIsWritten) {
    const TempDir dir;
    const auto result = run_attune({"tune", example("recipes/nemo-llama3-8b-h100.yaml"), "--lessons", lessons_fixture("malformed"),
                                    "--campaign", (dir.path() / "c").string()});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("misspelt-key.md:8: unknown field 'layuot'"), std::string::npos) << result.err;
    EXPECT_FALSE(fs::exists(dir.path() / "c"));
}

TEST(TuneLessons, TheShippedLessonsAreReadByDefault) {
    const TempDir dir;
    const auto campaign = dir.path() / "c";
    tune({example("recipes/nemo-llama3-70b-h100.yaml"), "--budget", "30gpuh"}, campaign);
    const auto read_lessons = of_type(campaign, "campaign-start").at(0)["lessons"];
    // The NeMo layout NVIDIA published for this model on H100 first.
    ASSERT_FALSE(read_lessons.empty());
    EXPECT_EQ(read_lessons.at(0), "lessons/llama3-70b-h100-nemo-published.md");
}

TEST(BenchLessons, TheDocumentSaysWhichLessonsItsCampaignsRead) {
    const TempDir dir;
    const auto suite = dir.path() / "suite";
    fs::create_directories(suite);
    std::ofstream(suite / "suite.yaml") << "- {recipe: " << example("recipes/nemo-llama3-8b-h100.yaml") << ", name: llama3-8b}\n";
    const auto result = run_attune({"-q", "bench", "--suite", suite.string(), "--policies", "rules", "--seeds", "1", "--budget",
                                    "30gpuh", "--lessons", lessons_fixture("wrong-flag"), "--json"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(json::parse(result.out)["lessons"], lessons_fixture("wrong-flag"));
    const auto plain = run_attune({"-q", "bench", "--suite", suite.string(), "--policies", "rules", "--seeds", "1", "--budget",
                                   "30gpuh", "--json"});
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_TRUE(json::parse(plain.out)["lessons"].is_null());
}

}  // namespace

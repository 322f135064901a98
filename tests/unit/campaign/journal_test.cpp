#include "support/run.hpp"

#include <attune/campaign/budget.hpp>
#include <attune/campaign/journal.hpp>
#include <attune/core/error.hpp>

#include <gtest/gtest.h>

#include <fstream>

using namespace attune;
using attune::test_support::TempDir;

TEST(Budget, ReadsTheAcceptedSpellings) {
    EXPECT_DOUBLE_EQ(campaign::parse_budget("200gpuh"), 200 * 3600.0);
    EXPECT_DOUBLE_EQ(campaign::parse_budget("200 gpu-h"), 200 * 3600.0);
    EXPECT_DOUBLE_EQ(campaign::parse_budget("12000gpumin"), 200 * 3600.0);
    EXPECT_DOUBLE_EQ(campaign::parse_budget("1.5GPUh"), 1.5 * 3600.0);
}

TEST(Budget, RefusesZeroNegativeAndUnitlessAmounts) {
    for (const char* bad : {"0", "0gpuh", "-5gpuh", "lots", "200", "200h", "", "nangpuh", "infgpuh"}) {
        try {
            (void)campaign::parse_budget(bad);
            ADD_FAILURE() << bad << " was accepted";
        } catch (const InputError& e) {
            EXPECT_EQ(std::string(e.what()), std::string("--budget '") + bad +
                                                 "': expected a positive GPU-time such as 200gpuh, '200 gpu-h' or 12000gpumin");
        }
    }
}

TEST(Journal, AppendsNumberedEventsAndReadsThemBack) {
    const TempDir dir;
    {
        auto journal = campaign::Journal::open(dir.path());
        journal.append("campaign-start", {{"recipe", "r.yaml"}});
        journal.append("launched", {{"trial", 1}});
    }
    const auto journal = campaign::Journal::open(dir.path());
    ASSERT_EQ(journal.events().size(), 2u);
    EXPECT_EQ(journal.events()[1]["type"], "launched");
    EXPECT_EQ(journal.events()[1]["seq"], 2);
    EXPECT_EQ(journal.events()[1]["v"], campaign::k_journal_schema);
    EXPECT_EQ(journal.events()[0]["recipe"], "r.yaml");
}

TEST(Journal, DropsATornLastLineAndKeepsAppending) {
    const TempDir dir;
    {
        auto journal = campaign::Journal::open(dir.path());
        journal.append("campaign-start");
    }
    { std::ofstream(dir.path() / "journal.jsonl", std::ios::app) << R"({"v":1,"seq":2,"type":"laun)"; }
    auto journal = campaign::Journal::open(dir.path());
    EXPECT_EQ(journal.events().size(), 1u);
    EXPECT_EQ(journal.dropped_bytes(), 27u);
    journal.append("launched");
    const auto reread = campaign::Journal::open(dir.path());
    ASSERT_EQ(reread.events().size(), 2u);
    EXPECT_EQ(reread.events()[1]["type"], "launched");
    EXPECT_EQ(reread.dropped_bytes(), 0u);
}

TEST(Journal, RefusesAFileThatIsNotAJournal) {
    const TempDir dir;
    dir.write("journal.jsonl", "{\"v\":1,\"type\":\"x\"}\nhello\n");
    try {
        (void)campaign::Journal::open(dir.path());
        FAIL();
    } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()), (dir.path() / "journal.jsonl").string() + ":2: not a journal event");
    }
}

TEST(CampaignLock, RefusesASecondHolder) {
    const TempDir dir;
    const campaign::CampaignLock first(dir.path());
    try {
        const campaign::CampaignLock second(dir.path());
        FAIL();
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("another attune process (pid"), std::string::npos) << e.what();
    }
}

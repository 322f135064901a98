// A cluster's time limit in Slurm's spellings: a trial without an estimate runs under it.
#include "support/run.hpp"

#include <attune/cluster/cluster.hpp>
#include <attune/core/error.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace {

using namespace attune;

TEST(SlurmTime, ParsesEverySlurmSpelling) {
    EXPECT_EQ(cluster::slurm_time_seconds("30"), 1800);
    EXPECT_EQ(cluster::slurm_time_seconds("1:30"), 90);
    EXPECT_EQ(cluster::slurm_time_seconds("01:02:03"), 3723);
    EXPECT_EQ(cluster::slurm_time_seconds("2-03"), 2 * 86400 + 3 * 3600);
    EXPECT_EQ(cluster::slurm_time_seconds("1-00:00:10"), 86410);
    EXPECT_FALSE(cluster::slurm_time_seconds("UNLIMITED"));
    EXPECT_FALSE(cluster::slurm_time_seconds(""));
    EXPECT_FALSE(cluster::slurm_time_seconds("1:2:3:4"));
}

TEST(ClusterTimeLimit, IsReadInSecondsAndAMalformedOneIsRefusedWithItsLine) {
    const test_support::TempDir dir;
    const auto good = cluster::load_cluster(dir.write("c.yaml", "name: c\ngpu: h100\ntime_limit: \"1-00:30:00\"\n"));
    EXPECT_EQ(good.time_limit, "1-00:30:00");
    EXPECT_EQ(good.time_limit_s, 86400 + 1800);
    EXPECT_FALSE(cluster::load_cluster(dir.write("n.yaml", "name: n\ngpu: h100\n")).time_limit_s);
    EXPECT_FALSE(cluster::load_cluster(dir.write("u.yaml", "name: u\ngpu: h100\ntime_limit: UNLIMITED\n")).time_limit_s);
    for (const char* bad : {"half an hour", "0", "-1"}) {
        try {
            (void)cluster::load_cluster(dir.write("b.yaml", fmt::format("name: b\ngpu: h100\n\ntime_limit: {}\n", bad)));
            FAIL() << "expected an InputError for " << bad;
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find("b.yaml:4"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("Slurm time limit"), std::string::npos) << e.what();
        }
    }
}

}  // namespace

#pragma once

#include <attune/campaign/record.hpp>

#include <string>

namespace attune::report {

/// What the journal does not hold about the model, read from the recipe by the caller.
struct LessonFacts {
    std::string model;      ///< the model's name as the recipe gives it
    double params_b = 0;    ///< total parameters, billions
    bool moe = false;
    int gpus = 0;
    int seq_len = 0;
};

/// A skills/lessons/ file (skills/lessons/README.md, "Format") from a finished campaign.
std::string lessons(const campaign::CampaignRecord& record, const LessonFacts& facts);

}  // namespace attune::report

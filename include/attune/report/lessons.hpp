#pragma once

#include <attune/campaign/campaign.hpp>
#include <attune/campaign/record.hpp>
#include <attune/policy/lessons.hpp>

#include <string>

namespace attune::report {

/// What a finished campaign teaches, in the terms the rules policy reads (skills/lessons/README.md):
/// the model and cluster it ran on, the best layout (when the simulator can read the recipe's shape),
/// the flags accepted on the way, the cluster's measured memory bias and the evidence.
policy::Lesson lesson_of(const campaign::CampaignRecord& record, const campaign::Context& context);

/// A skills/lessons/ file (skills/lessons/README.md, "Format"): `lesson`'s front matter, then the prose.
std::string lessons(const campaign::CampaignRecord& record, const policy::Lesson& lesson);

}  // namespace attune::report

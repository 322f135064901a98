#pragma once

#include <attune/policy/lessons.hpp>
#include <attune/policy/policy.hpp>
#include <attune/policy/search_rules.hpp>

#include <vector>

namespace attune::policy {

/// The default policy: the skill set's search rules, interpreted (skills/rules/search.yaml).
/// Among the applicable moves of the first phase that has any, it proposes the one the nominal
/// estimator ranks fastest, skipping moves predicted not to fit (the estimate scaled by the largest
/// measured peak / estimate ratio of the campaign's finished runs), configurations already tried and
/// moves needing as much memory as a layout that ran out of memory. `lessons` (matching_lessons' order):
/// before its own moves it takes those the first lesson still standing points to, one lever at a time
/// toward the lesson's layout translated to this recipe, then the flags that helped there; a lesson
/// whose move is not accepted here is dropped.
std::unique_ptr<Policy> make_rules_policy(const SearchRules& rules, std::vector<Lesson> lessons = {});

/// The facts guards read for a configuration: the adapter's quantities of `recipe`, the latest
/// diagnosis facts (memory_headroom_gib, is_<bottleneck>, status_<status>, ...) and `extra`.
gate::Expression::Lookup facts_lookup(const recipe::Document& recipe, const gate::Adapter& adapter,
                                      const cluster::Cluster& cluster, const Measurement* measured,
                                      const std::map<std::string, double>& extra);

/// The flags a measurement contributes as facts: status_<status> and is_<bottleneck>, plus its
/// diagnosis facts and memory_headroom_gib.
std::map<std::string, double> measurement_facts(const Measurement& measured);

}  // namespace attune::policy

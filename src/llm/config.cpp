#include <attune/llm/config.hpp>

#include <attune/core/error.hpp>
#include <attune/llm/sigv4.hpp>
#include <attune/util/strings.hpp>

#include <fmt/format.h>

#include <array>

namespace attune::llm {

namespace {

constexpr std::array<Provider, 3> k_providers{Provider::openai, Provider::anthropic, Provider::bedrock};

constexpr const char* k_accepted =
    "expected PROVIDER:MODEL with PROVIDER one of openai, anthropic, bedrock "
    "(e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5, bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0)";

Provider parse_provider(std::string_view spec, std::string_view name) {
    std::vector<std::string> names;
    for (const auto provider : k_providers) {
        if (name == to_string(provider)) return provider;
        names.emplace_back(to_string(provider));
    }
    std::string hint;
    if (const auto close = util::closest_match(util::to_lower(name), names)) hint = fmt::format(" (did you mean '{}'?)", *close);
    throw InputError(fmt::format("--llm '{}': unknown provider '{}'{}; {}", spec, name, hint, k_accepted));
}

std::string check_url(std::string_view url) {
    std::string out(util::trim(url));
    if (!out.starts_with("http://") && !out.starts_with("https://"))
        throw InputError(fmt::format("--llm-url '{}': expected an http:// or https:// URL, such as "
                                     "http://localhost:8000/v1 for an OpenAI-compatible server",
                                     url));
    while (out.ends_with('/')) out.pop_back();
    return out;
}

}  // namespace

const char* to_string(Provider provider) {
    switch (provider) {
    case Provider::openai: return "openai";
    case Provider::anthropic: return "anthropic";
    case Provider::bedrock: return "bedrock";
    }
    return "openai";
}

Config parse_llm_option(std::string_view spec, std::string_view url) {
    // Only the first ':' separates: Bedrock model ids hold colons of their own (...-v1:0).
    const auto colon = spec.find(':');
    if (colon == std::string_view::npos)
        throw InputError(fmt::format("--llm '{}': no model given; {}", spec, k_accepted));
    Config config;
    config.provider = parse_provider(spec, spec.substr(0, colon));
    config.model = std::string(util::trim(spec.substr(colon + 1)));
    if (config.model.empty()) throw InputError(fmt::format("--llm '{}': the model is empty; {}", spec, k_accepted));
    if (!url.empty()) config.base_url = check_url(url);
    return config;
}

std::string endpoint_url(const Config& config, std::string_view region) {
    switch (config.provider) {
    case Provider::openai: {
        const std::string base = config.base_url.empty() ? "https://api.openai.com/v1" : config.base_url;
        return base + "/chat/completions";
    }
    case Provider::anthropic: {
        const std::string base = config.base_url.empty() ? "https://api.anthropic.com" : config.base_url;
        return base + "/v1/messages";
    }
    case Provider::bedrock: {
        const std::string base = config.base_url.empty()
                                     ? fmt::format("https://bedrock-runtime.{}.amazonaws.com", region)
                                     : config.base_url;
        // The model id is one path segment: ':' and '/' in ids and ARNs are percent-encoded.
        return base + "/model/" + sigv4::uri_encode(config.model, sigv4::Slash::encode) + "/converse";
    }
    }
    return {};
}

}  // namespace attune::llm

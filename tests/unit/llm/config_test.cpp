#include <attune/llm/client.hpp>
#include <attune/llm/config.hpp>

#include <gtest/gtest.h>

#include <map>

using namespace attune::llm;

namespace {

std::string input_error(std::string_view spec, std::string_view url = {}) {
    try {
        parse_llm_option(spec, url);
    } catch (const attune::InputError& error) {
        return error.what();
    }
    return "no error";
}

// make_client with a fake environment: credentials are read, nothing is sent.
std::string client_error(const Config& config, const std::map<std::string, std::string>& variables) {
    Environment environment;
    environment.getenv = [variables](const std::string& name) -> std::optional<std::string> {
        const auto it = variables.find(name);
        return it == variables.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    try {
        make_client(config, environment);
    } catch (const attune::InputError& error) {
        return error.what();
    }
    return "no error";
}

}  // namespace

TEST(LlmConfig, ReadsProviderAndModelSplittingAtTheFirstColonOnly) {
    const auto config = parse_llm_option("bedrock:anthropic.claude-3-haiku-20240307-v1:0");
    EXPECT_EQ(config.provider, Provider::bedrock);
    EXPECT_EQ(config.model, "anthropic.claude-3-haiku-20240307-v1:0");
    EXPECT_EQ(parse_llm_option("openai:gpt-4o").provider, Provider::openai);
    EXPECT_EQ(parse_llm_option("anthropic:claude-sonnet-4-5").model, "claude-sonnet-4-5");
}

TEST(LlmConfig, NamesTheValueAndTheAcceptedFormsWhenWrong) {
    EXPECT_EQ(input_error("gpt-4o"),
              "--llm 'gpt-4o': no model given; expected PROVIDER:MODEL with PROVIDER one of openai, anthropic, "
              "bedrock (e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5, "
              "bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0)");
    EXPECT_NE(input_error("opnai:gpt-4o").find("unknown provider 'opnai' (did you mean 'openai'?)"), std::string::npos);
    EXPECT_NE(input_error("openai:").find("the model is empty"), std::string::npos);
    EXPECT_NE(input_error("openai:gpt-4o", "localhost:8000/v1").find("expected an http:// or https:// URL"),
              std::string::npos);
}

TEST(LlmConfig, EndpointsFollowEachSdksBaseUrlConvention) {
    EXPECT_EQ(endpoint_url(parse_llm_option("openai:m")), "https://api.openai.com/v1/chat/completions");
    EXPECT_EQ(endpoint_url(parse_llm_option("openai:m", "http://localhost:8000/v1/")),
              "http://localhost:8000/v1/chat/completions");
    EXPECT_EQ(endpoint_url(parse_llm_option("anthropic:m")), "https://api.anthropic.com/v1/messages");
    EXPECT_EQ(endpoint_url(parse_llm_option("anthropic:m", "https://proxy.example/anthropic")),
              "https://proxy.example/anthropic/v1/messages");
    EXPECT_EQ(endpoint_url(parse_llm_option("bedrock:a.b-v1:0"), "eu-west-1"),
              "https://bedrock-runtime.eu-west-1.amazonaws.com/model/a.b-v1%3A0/converse");
    EXPECT_EQ(endpoint_url(parse_llm_option("bedrock:arn:aws:bedrock:us-east-1:1:inference-profile/x", "http://h:1")),
              "http://h:1/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx/converse");
}

TEST(LlmConfig, MissingCredentialsNameTheEnvironmentVariable) {
    EXPECT_EQ(client_error(parse_llm_option("anthropic:m"), {}),
              "--llm anthropic: the environment variable ANTHROPIC_API_KEY is not set; attune reads anthropic "
              "credentials only from the environment");
    EXPECT_NE(client_error(parse_llm_option("bedrock:m"), {{"AWS_ACCESS_KEY_ID", "a"}}).find("AWS_SECRET_ACCESS_KEY"),
              std::string::npos);
    EXPECT_NE(client_error(parse_llm_option("bedrock:m"), {{"AWS_ACCESS_KEY_ID", "a"}, {"AWS_SECRET_ACCESS_KEY", "b"}})
                  .find("no AWS region; set AWS_REGION"),
              std::string::npos);
}

TEST(LlmConfig, OpenAiCompatibleServersNeedNoKey) {
    EXPECT_EQ(client_error(parse_llm_option("openai:m", "http://127.0.0.1:9/v1"), {}), "no error");
}

TEST(LlmConfig, BedrockTakesTheRegionFromTheRuntimeUrlWhenTheEnvironmentHasNone) {
    const auto config = parse_llm_option("bedrock:m", "https://bedrock-runtime.ap-south-1.amazonaws.com");
    EXPECT_EQ(client_error(config, {{"AWS_ACCESS_KEY_ID", "a"}, {"AWS_SECRET_ACCESS_KEY", "b"}}), "no error");
}

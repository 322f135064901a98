// AWS Signature Version 4 against AWS's published test-suite vectors (the "aws-sig-v4-test-suite",
// as kept in awslabs/aws-c-auth tests/aws-signing-test-suite/v4/): credentials AKIDEXAMPLE,
// region us-east-1, service "service", 20150830T123600Z. The expected signatures below are the
// published ones, not values this signer produced.

#include <attune/llm/sigv4.hpp>

#include <gtest/gtest.h>

using namespace attune::llm::sigv4;

namespace {

const Credentials k_suite{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
constexpr const char* k_date = "20150830T123600Z";

Request suite_request(std::string method, std::string path, std::string query = {}) {
    Request request;
    request.method = std::move(method);
    request.path = std::move(path);
    request.query = std::move(query);
    request.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", k_date}};
    return request;
}

std::string suite_signature(const Request& request, const Credentials& credentials = k_suite) {
    return sign(request, credentials, "us-east-1", "service", k_date).signature;
}

}  // namespace

TEST(SigV4, GetVanillaMatchesThePublishedAuthorization) {
    const auto signature = sign(suite_request("GET", "/"), k_suite, "us-east-1", "service", k_date);
    EXPECT_EQ(signature.canonical_request,
              "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(signature.authorization,
              "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
              "SignedHeaders=host;x-amz-date, "
              "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST(SigV4, GetVanillaQueryWithAnEmptyQuerySignsLikeGetVanilla) {
    EXPECT_EQ(suite_signature(suite_request("GET", "/", "")),
              "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST(SigV4, GetVanillaQueryOrderKeyCaseSortsTheParameters) {
    EXPECT_EQ(suite_signature(suite_request("GET", "/", "Param2=value2&Param1=value1")),
              "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

TEST(SigV4, GetVanillaEmptyQueryKey) {
    EXPECT_EQ(suite_signature(suite_request("GET", "/", "Param1=value1")),
              "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb");
}

TEST(SigV4, GetUtf8EncodesEachByteOfThePath) {
    const auto signature = sign(suite_request("GET", "/\xE1\x88\xB4"), k_suite, "us-east-1", "service", k_date);
    EXPECT_NE(signature.canonical_request.find("\n/%E1%88%B4\n"), std::string::npos);
    EXPECT_EQ(signature.signature, "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85");
}

TEST(SigV4, PostVanilla) {
    EXPECT_EQ(suite_signature(suite_request("POST", "/")),
              "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
}

TEST(SigV4, PostVanillaQuery) {
    EXPECT_EQ(suite_signature(suite_request("POST", "/", "Param1=value1")),
              "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11");
}

TEST(SigV4, PostXWwwFormUrlencodedHashesTheBodyAndSignsContentType) {
    auto request = suite_request("POST", "/");
    request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    request.body = "Param1=value1";
    const auto signature = sign(request, k_suite, "us-east-1", "service", k_date);
    EXPECT_EQ(signature.string_to_sign,
              "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
              "42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281");
    EXPECT_EQ(signature.authorization,
              "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
              "SignedHeaders=content-type;host;x-amz-date, "
              "Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a");
}

TEST(SigV4, GetVanillaWithSessionTokenSignsTheTokenHeader) {
    const Credentials with_token{k_suite.access_key_id, k_suite.secret_access_key,
                                 "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"};
    auto request = suite_request("GET", "/");
    request.headers.emplace_back("X-Amz-Security-Token", with_token.session_token);
    const auto signature = sign(request, with_token, "us-east-1", "service", k_date);
    EXPECT_EQ(signature.authorization,
              "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
              "SignedHeaders=host;x-amz-date;x-amz-security-token, "
              "Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8");
}

// Bedrock model ids hold ':' (anthropic.claude-3-haiku-20240307-v1:0): the path on the wire has
// %3A, and the canonical URI encodes that '%' again, as every AWS SDK does for non-S3 services.
TEST(SigV4, EncodesAnEncodedPathSegmentAgain) {
    const auto signature =
        sign(suite_request("POST", "/model/a.b-v1%3A0/converse"), k_suite, "us-east-1", "bedrock", k_date);
    EXPECT_NE(signature.canonical_request.find("\n/model/a.b-v1%253A0/converse\n"), std::string::npos);
}

TEST(SigV4, RefusesAMalformedDate) {
    EXPECT_THROW(sign(suite_request("GET", "/"), k_suite, "us-east-1", "service", "2015-08-30"), std::invalid_argument);
}

TEST(SigV4, UriEncodeKeepsUnreservedCharactersOnly) {
    EXPECT_EQ(uri_encode("a-Z_0.9~ /:+", Slash::encode), "a-Z_0.9~%20%2F%3A%2B");
    EXPECT_EQ(uri_encode("/a b/", Slash::keep), "/a%20b/");
}

#include "fakes/scripted_client.hpp"

#include <gtest/gtest.h>

using namespace attune::llm;
using attune::test_support::ScriptedClient;

TEST(ScriptedClient, AnswersInOrderAndRecordsEachExchange) {
    ScriptedClient client;
    Reply reply;
    reply.text = "hello";
    reply.usage = {5, 6};
    client.enqueue(reply);
    client.enqueue(LlmError(FailureKind::timeout, "scripted timeout"));
    EXPECT_EQ(client.chat({Message::user("hi")}, {}).text, "hello");
    EXPECT_THROW(client.chat({Message::user("again")}, {}), LlmError);
    EXPECT_THROW(client.chat({Message::user("more")}, {}), LlmError);
    EXPECT_EQ(client.calls(), 2);
    EXPECT_EQ(client.usage().total(), 11);
    const auto exchanges = client.take_exchanges();
    ASSERT_EQ(exchanges.size(), 2U);
    EXPECT_EQ(exchanges[1].error, "scripted timeout");
    EXPECT_EQ(client.seen().at(1).at(0).text, "again");
}

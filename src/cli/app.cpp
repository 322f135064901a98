#include <attune/cli/command.hpp>
#include <attune/core/log.hpp>
#include <attune/util/strings.hpp>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <utility>

namespace attune::cli {

namespace {

std::vector<std::pair<int, Registrar>>& registrars() {
    static std::vector<std::pair<int, Registrar>> all;
    return all;
}

GlobalOptions& mutable_global_options() {
    static GlobalOptions options;
    return options;
}

int report(ExitCode code, const std::string& message) {
    std::fprintf(stderr, "attune: error: %s\n", message.c_str());
    return static_cast<int>(code);
}

/// For a misspelt subcommand, CLI11 only says that one is required: name the word instead.
std::string unknown_command_hint(CLI::App& app, int argc, char** argv) {
    CLI::App* current = &app;
    for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        if (word.empty() || word.front() == '-') continue;
        const auto subcommands = current->get_subcommands([](CLI::App*) { return true; });
        if (subcommands.empty()) return {};
        std::vector<std::string> names;
        CLI::App* next = nullptr;
        for (auto* subcommand : subcommands) {
            names.push_back(subcommand->get_name());
            if (subcommand->get_name() == word) next = subcommand;
        }
        if (next == nullptr) {
            const auto suggestion = util::closest_match(word, names);
            return "unknown command '" + word + "'" +
                   (suggestion ? "; did you mean '" + *suggestion + "'?" : "; expected one of " + util::join(names, ", "));
        }
        current = next;
    }
    return {};
}

}  // namespace

Registration::Registration(int order, Registrar registrar) {
    registrars().emplace_back(order, std::move(registrar));
}

const GlobalOptions& global_options() { return mutable_global_options(); }

int run(int argc, char** argv) {
    CLI::App app{"attune: tunes the throughput of LLM-training recipes without changing what they train"};
    app.require_subcommand(1);
    app.set_version_flag("--version", ATTUNE_VERSION);
    auto& globals = mutable_global_options();
    app.add_flag("-q,--quiet", globals.quiet, "Print only errors on stderr");
    app.add_flag("-v,--verbose", globals.verbose, "Print debug messages on stderr");

    auto& all = registrars();
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    Action chosen;
    for (const auto& [order, registrar] : all) registrar(app, chosen);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        const auto hint = unknown_command_hint(app, argc, argv);
        return report(ExitCode::usage, (hint.empty() ? std::string(e.what()) : hint) + "; see 'attune --help'");
    } catch (const Error& e) {
        return report(e.code(), e.what());
    }
    setup_logging(globals.quiet ? Verbosity::quiet : globals.verbose ? Verbosity::verbose : Verbosity::normal);
    try {
        return chosen ? chosen() : static_cast<int>(ExitCode::usage);
    } catch (const Error& e) {
        return report(e.code(), e.what());
    } catch (const std::exception& e) {
        return report(ExitCode::failure, std::string("internal error: ") + e.what());
    }
}

}  // namespace attune::cli

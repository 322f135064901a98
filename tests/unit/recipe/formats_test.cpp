// Recipes in every format attune reads (YAML, JSON, TOML, launch scripts and their key=value
// overrides): the same key paths and typed values,
// and edits that rewrite only the bytes of the value they change.
#include "support/run.hpp"

#include <attune/core/error.hpp>
#include <attune/recipe/document.hpp>
#include <attune/util/files.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace fs = std::filesystem;
using namespace attune;
using recipe::Document;
using recipe::Value;

namespace {

/// The bytes of `before` that `after` rewrote: [first, last) of `before`.
std::pair<std::size_t, std::size_t> changed_region(const std::string& before, const std::string& after) {
    std::size_t prefix = 0;
    while (prefix < before.size() && prefix < after.size() && before[prefix] == after[prefix]) ++prefix;
    std::size_t suffix = 0;
    while (suffix < before.size() - prefix && suffix < after.size() - prefix &&
           before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix])
        ++suffix;
    return {prefix, before.size() - suffix};
}

/// Another value of the same kind, so that the edit is visible.
Value other_than(const Value& value) {
    switch (value.kind()) {
        case Value::Kind::boolean: return Value::boolean(!*value.as_bool());
        case Value::Kind::number: return Value::number(*value.as_number() + 3);
        default: return Value::string(value.to_string() + "-edited");
    }
}

TEST(RecipeFormats, JsonKeepsItsQuotesAndAddsKeysToObjects) {
    const std::string text = "{\n  \"train_batch_size\": \"auto\",\n  \"zero_optimization\": {\n    \"stage\": 3,\n    \"offload\": null\n  }\n}\n";
    const auto doc = Document::parse(text, "ds.json");
    EXPECT_EQ(doc.format(), recipe::Format::json);
    EXPECT_EQ(doc.find("zero_optimization.stage")->as_number(), 3);
    const auto edited = doc.with_edits({{"train_batch_size", Value::string("x y")},
                                        {"zero_optimization.offload", Value::string("cpu")},
                                        {"zero_optimization.overlap_comm", Value::boolean(true)}});
    EXPECT_EQ(edited.text(), "{\n  \"train_batch_size\": \"x y\",\n  \"zero_optimization\": {\n    \"stage\": 3,\n"
                             "    \"offload\": \"cpu\",\n    \"overlap_comm\": true\n  }\n}\n");
    const auto nested = doc.with_edits({{"bf16.enabled", Value::boolean(true)}});
    EXPECT_EQ(nested.find("bf16.enabled")->as_bool(), true);
    EXPECT_NE(nested.text().find("\"bf16\": {\"enabled\": true}"), std::string::npos) << nested.text();
}

TEST(RecipeFormats, TomlReadsInDocumentOrderAndAddsKeysWhereTomlExpectsThem) {
    const std::string text = "# job\ntop = 1\n\n[training]\nsteps = 100  # short\nlr = 8e-4\nname = \"c4\"\n\n"
                             "[parallelism]\ntp = { degree = 2 }\n";
    const auto doc = Document::parse(text, "job.toml");
    EXPECT_EQ(doc.format(), recipe::Format::toml);
    std::vector<std::string> paths;
    for (const auto& leaf : doc.leaves()) paths.push_back(leaf.path);
    EXPECT_EQ(paths, (std::vector<std::string>{"top", "training.steps", "training.lr", "training.name", "parallelism.tp.degree"}));
    EXPECT_EQ(doc.find("training.lr")->as_number(), 8e-4);
    EXPECT_EQ(doc.find("training.name")->kind(), Value::Kind::string);
    const auto edited = doc.with_edits({{"training.steps", Value::number(20)},
                                        {"training.seed", Value::number(7)},
                                        {"extra", Value::string("a")},
                                        {"parallelism.tp.async", Value::boolean(true)},
                                        {"parallelism.cp.degree", Value::number(2)}});
    EXPECT_EQ(edited.text(), "# job\ntop = 1\nextra = \"a\"\n\n[training]\nsteps = 20  # short\nlr = 8e-4\nname = \"c4\"\n"
                             "seed = 7\n\n[parallelism]\ntp = { degree = 2, async = true }\ncp.degree = 2\n");
    EXPECT_THROW((void)doc.with_edits({{"training.steps", Value::null()}}), InputError);
}

TEST(RecipeFormats, ATomlKeyGivenTwiceIsRefusedWithItsLine) {
    try {
        (void)Document::parse("[training]\nsteps = 1\nsteps = 2\n", "job.toml");
        FAIL() << "expected an InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("job.toml:3:"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("steps"), std::string::npos) << e.what();
    }
}

TEST(RecipeFormats, ALaunchScriptReadsItsArgumentArraysWithTheVariablesItAssigns) {
    const std::string text =
        "#!/bin/bash\n"
        "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        "TP=2\n"
        "CKPT=${1:-\"ckpt/run\"}\n"
        "DTYPE=\"fp8\"\n"
        "WORLD=$((8*2))\n"
        "MODEL_ARGS=(\n"
        "    --num-layers 32   # the layers\n"
        "    --tensor-model-parallel-size $TP\n"
        "    --swiglu\n"
        "    --save \"$CKPT\"\n"
        ")\n"
        "EXTRA=()\n"
        "if [[ \"$DTYPE\" == \"fp8\" ]]; then\n"
        "    EXTRA+=(\n"
        "        \"--fp8-format hybrid\"\n"
        "    )\n"
        "else\n"
        "    EXTRA+=(--bf16)\n"
        "fi\n"
        "torchrun ${MODEL_ARGS[@]} ${EXTRA[@]}\n";
    const auto doc = Document::parse(text, "train.sh");
    EXPECT_EQ(doc.format(), recipe::Format::shell);
    EXPECT_EQ(doc.find("MODEL_ARGS.--num-layers")->as_number(), 32);
    EXPECT_EQ(doc.find("MODEL_ARGS.--tensor-model-parallel-size")->as_number(), 2);
    EXPECT_EQ(doc.find("MODEL_ARGS.--swiglu")->as_bool(), true);
    EXPECT_EQ(doc.find("MODEL_ARGS.--save")->to_string(), "ckpt/run");
    EXPECT_EQ(doc.find("EXTRA.--fp8-format")->to_string(), "hybrid");
    EXPECT_EQ(doc.find("EXTRA.--bf16"), nullptr) << "the branch the script does not take";
    EXPECT_EQ(doc.find("env.CUDA_DEVICE_MAX_CONNECTIONS")->as_number(), 1);

    // A value read through a variable is edited where the script assigns it; a new flag goes on a
    // line of its own before the array's `)`.
    const auto edited = doc.with_edits({{"MODEL_ARGS.--tensor-model-parallel-size", Value::number(4)},
                                        {"MODEL_ARGS.--num-layers", Value::number(40)},
                                        {"EXTRA.--fp8-format", Value::string("e4m3")},
                                        {"MODEL_ARGS.--pipeline-model-parallel-size", Value::number(2)}});
    std::string expected = text;
    for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
             {"TP=2", "TP=4"}, {"--num-layers 32 ", "--num-layers 40 "}, {"\"--fp8-format hybrid\"", "\"--fp8-format e4m3\""},
             {"    --save \"$CKPT\"\n", "    --save \"$CKPT\"\n    --pipeline-model-parallel-size 2\n"}})
        expected.replace(expected.find(from), from.size(), to);
    EXPECT_EQ(edited.text(), expected);
    // A new environment variable is a new export after the last one.
    const auto exported = doc.with_edits({{"env.NCCL_DEBUG", Value::string("WARN")}});
    EXPECT_NE(exported.text().find("export CUDA_DEVICE_MAX_CONNECTIONS=1\nexport NCCL_DEBUG=WARN\n"), std::string::npos)
        << exported.text();
    EXPECT_EQ(exported.find("env.NCCL_DEBUG")->to_string(), "WARN");
    // What a script cannot take safely is refused, not written.
    for (const auto& refused : std::vector<recipe::Edit>{{"MODEL_ARGS.--swiglu", Value::number(2)},
                                                         {"env.BAD-NAME", Value::number(1)},
                                                         {"MODEL_ARGS.--save", Value::string("other")},
                                                         {"MODEL_ARGS.--num-layers", Value::string("$(reboot)")}})
        EXPECT_THROW((void)doc.with_edits({refused}), InputError) << refused.path;
}

TEST(RecipeFormats, ALaunchScriptFlagIsTurnedOffByRemovingItAndFoundInWhicheverArrayHoldsIt) {
    const std::string text =
        "MODEL_ARGS=(\n"
        "    --num-layers 32\n"
        "    --sequence-parallel  # with tp\n"
        "    --swiglu --disable-bias-linear\n"
        ")\n"
        "TRAINING_ARGS=(\n"
        "    --micro-batch-size 1\n"
        "    --recompute-granularity full\n"
        "    --lr 1e-4\n"
        "    --clip-grad 1.0\n"
        "    --bf16\n"
        ")\n"
        "DTYPE_ARGS=(\n"
        "    \"--fp8-param-gather\"\n"
        ")\n";
    const auto doc = Document::parse(text, "train.sh");
    // `*.--flag` is the flag in whichever array the script writes it.
    EXPECT_EQ(doc.find("*.--micro-batch-size")->as_number(), 1);
    EXPECT_EQ(doc.placed("*.--micro-batch-size"), "TRAINING_ARGS.--micro-batch-size");
    EXPECT_TRUE(doc.has("*.--fp8-param-gather"));
    EXPECT_EQ(doc.find("*.--tensor-model-parallel-size"), nullptr);
    // A flag it lacks goes into the array holding the most flags.
    EXPECT_EQ(doc.placed("*.--overlap-grad-reduce"), "TRAINING_ARGS.--overlap-grad-reduce");
    const auto edited = doc.with_edits({{"*.--sequence-parallel", Value::boolean(false)},
                                        {"*.--disable-bias-linear", Value::null()},
                                        {"*.--recompute-granularity", Value::null()},
                                        {"*.--fp8-param-gather", Value::boolean(false)},
                                        {"*.--overlap-grad-reduce", Value::boolean(true)},
                                        {"*.--bf16", Value::boolean(true)},
                                        {"*.--cpu-offloading", Value::boolean(false)}});
    EXPECT_EQ(edited.text(),
              "MODEL_ARGS=(\n"
              "    --num-layers 32\n"
              "    # with tp\n"
              "    --swiglu \n"
              ")\n"
              "TRAINING_ARGS=(\n"
              "    --micro-batch-size 1\n"
              "    --lr 1e-4\n"
              "    --clip-grad 1.0\n"
              "    --bf16\n"
              "    --overlap-grad-reduce\n"
              ")\n"
              "DTYPE_ARGS=(\n"
              ")\n");
}

TEST(RecipeFormats, ALaunchScriptSaysWhatItCannotFollowAndAFlagGivenTwice) {
    try {
        (void)Document::parse("ARGS=()\nif [ -f /etc/x ]; then\n  ARGS+=(--bf16)\nfi\n", "train.sh");
        FAIL() << "expected an InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("train.sh:3:"), std::string::npos) << e.what();
    }
    // A test that is no test (found by mutating the shared script) is one attune cannot evaluate, not a crash.
    EXPECT_THROW((void)Document::parse("if ]] x; then\n  ARGS=(--bf16)\nfi\n", "train.sh"), InputError);
    const auto twice = Document::parse("ARGS=(\n  --lr 1e-4\n  --lr 2e-4\n)\n", "train.sh");
    ASSERT_EQ(twice.duplicates().size(), 1u);
    EXPECT_EQ(twice.duplicates().front().path, "ARGS.--lr");
    EXPECT_EQ(twice.duplicates().front().first_line, 2);
    EXPECT_EQ(twice.duplicates().front().second_line, 3);
    const auto across = Document::parse("A=(\n  --lr 1e-4\n)\nB=(\n  --lr 2e-4\n)\n", "train.sh");
    ASSERT_EQ(across.duplicates().size(), 1u) << "argparse keeps the last of two arrays' flags too";
    EXPECT_EQ(across.duplicates().front().path, "B.--lr");
    EXPECT_EQ(across.duplicates().front().first_line, 2);
    EXPECT_EQ(across.duplicates().front().second_line, 5);
}

TEST(RecipeFormats, ACommandsOverridesAreReadOverTheBaseConfigItNames) {
    const test_support::TempDir dir;
    const std::string base =
              "trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  micro_batch_size: 4\n  global_batch_size: 256\n"
              "  tensor_model_parallel_size: 1\n  mcore_gpt: true\n  optim:\n    lr: 1e-4\n"
              "  parallel_size: ${multiply:${model.tensor_model_parallel_size}, 1}\n";
    dir.write("conf/gpt.yaml", base);
    const std::string text =
        "#!/bin/bash\n"
        "TP=2\n"
        "echo starting run=1\n"
        "python megatron_gpt_pretraining.py --config-path=conf --config-name=gpt \\\n"
        "    trainer.num_nodes=2 \\\n"
        "    model.tensor_model_parallel_size=$TP \\\n"
        "    +model.extra=abc \\\n"
        "    model.micro_batch_size=2\n";
    const auto script = dir.write("pretrain.sh", text);
    const auto doc = Document::load(script);
    EXPECT_EQ(doc.format(), recipe::Format::shell);
    EXPECT_EQ(doc.find("trainer.num_nodes")->as_number(), 2) << "an override wins over the base";
    EXPECT_EQ(doc.find("trainer.devices")->as_number(), 8);
    EXPECT_EQ(doc.find_leaf("trainer.devices")->origin, recipe::Origin::base);
    EXPECT_EQ(doc.find_leaf("trainer.devices")->mark.line, 4) << "a base key is placed at the command naming the base";
    EXPECT_EQ(doc.find("model.tensor_model_parallel_size")->as_number(), 2);
    EXPECT_EQ(doc.find("model.parallel_size")->as_number(), 2) << "the base's interpolations see the overrides";
    EXPECT_EQ(doc.find("model.extra")->to_string(), "abc");
    EXPECT_EQ(doc.find("run"), nullptr) << "only a Python program's words are overrides";
    EXPECT_EQ(doc.with_edits({}).text(), text);

    // An override is rewritten where it is (or where its variable is assigned); a base key or a new
    // one is a new override after the last, on a line of its own like it; the base never changes.
    const auto edited = doc.with_edits({{"model.micro_batch_size", Value::number(1)},
                                        {"model.tensor_model_parallel_size", Value::number(4)},
                                        {"model.mcore_gpt", Value::boolean(false)},
                                        {"model.brand_new", Value::null()},
                                        {"trainer.devices", Value::null()}});
    std::string expected = text;
    expected.replace(expected.find("TP=2"), 4, "TP=4");
    expected.replace(expected.find("model.micro_batch_size=2\n"), 25,
                     "model.micro_batch_size=1 \\\n    model.mcore_gpt=false \\\n    trainer.devices=null\n");
    EXPECT_EQ(edited.text(), expected);
    EXPECT_EQ(edited.find("model.mcore_gpt")->as_bool(), false);
    EXPECT_TRUE(edited.find("trainer.devices")->is_null());
    const auto added = doc.with_edits({{"model.new_key", Value::number(3)}});
    EXPECT_NE(added.text().find("    +model.new_key=3\n"), std::string::npos) << "a key the base lacks takes Hydra's +";
    EXPECT_EQ(util::read_text_file(dir.path() / "conf/gpt.yaml"), base);
    for (const auto& refused : std::vector<recipe::Edit>{{"model.optim", Value::number(2)},
                                                         {"model.micro_batch_size", Value::string("$(reboot)")},
                                                         {"model.extra", Value::string("a b")}})
        EXPECT_THROW((void)doc.with_edits({refused}), InputError) << refused.path;
}

TEST(RecipeFormats, OverridesWithoutABaseAndWhatACommandLineCannotSay) {
    // Without a base (a Python recipe's own values), the overrides are the recipe; new ones follow
    // on the command's line.
    const auto doc = Document::parse("python -m train.run recipe=llama3 train.gbs=512 model.tp=2\n", "run.sh");
    EXPECT_EQ(doc.find("train.gbs")->as_number(), 512);
    EXPECT_EQ(doc.find("recipe")->to_string(), "llama3");
    EXPECT_EQ(doc.with_edits({{"model.pp", Value::number(2)}}).text(),
              "python -m train.run recipe=llama3 train.gbs=512 model.tp=2 model.pp=2\n");
    const auto twice = Document::parse("torchrun --nproc-per-node 8 run.py \\\n  model.tp=2 \\\n  model.tp=4\n", "run.sh");
    ASSERT_EQ(twice.duplicates().size(), 1u);
    EXPECT_EQ(twice.duplicates().front().path, "model.tp");
    EXPECT_EQ(twice.duplicates().front().first_line, 2);
    EXPECT_EQ(twice.duplicates().front().second_line, 3);
    const auto says = [](const std::string& text, const std::string& what) {
        try {
            (void)Document::parse(text, "run.sh");
            ADD_FAILURE() << "expected an InputError: " << what;
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
        }
    };
    says("python3 -m MaxText.train \\\n  MaxText/configs/base.yml run_name=x\n",
         "run.sh:2: the base config MaxText/configs/base.yml is not found");
    says("python train.py model.tp=2 \\\n  ~model.pp=1\n", "run.sh:2: '~model.pp=1' deletes a key");
    says("if [ -f /etc/x ]; then\n  python train.py model.tp=2\nfi\n", "run.sh:2: the override 'model.tp=2'");
}

TEST(RecipeFormats, DottedFlagsOverrideAJobFileAsTyroReadsThem) {
    // torchtitan's command line: `--section.key value` over the TOML job file `--job.config_file` names.
    const test_support::TempDir dir;
    dir.write("job.toml", "[training]\nlocal_batch_size = 1\nsteps = 100\n[parallelism]\ntensor_parallel_degree = 1\n"
                          "[compile]\nenable = false\n[metrics]\nenable_tensorboard = true\n");
    const std::string text =
        "torchrun --nproc_per_node=8 -m torchtitan.train --job.config_file ./job.toml \\\n"
        "    --parallelism.tensor-parallel-degree 2 \\\n"
        "    --training.steps=50 \\\n"
        "    --compile.enable \\\n"
        "    --metrics.no_enable_tensorboard\n";
    const auto doc = Document::load(dir.write("train.sh", text));
    EXPECT_EQ(doc.find("parallelism.tensor_parallel_degree")->as_number(), 2) << "tyro reads - and _ alike";
    EXPECT_EQ(doc.find("training.steps")->as_number(), 50);
    EXPECT_EQ(doc.find("training.local_batch_size")->as_number(), 1);
    EXPECT_EQ(doc.find_leaf("training.local_batch_size")->origin, recipe::Origin::base);
    EXPECT_EQ(doc.find("compile.enable")->as_bool(), true);
    EXPECT_EQ(doc.find("metrics.enable_tensorboard")->as_bool(), false);
    EXPECT_EQ(doc.find("job.config_file"), nullptr) << "the flag naming the base is not a key of the job";
    EXPECT_EQ(doc.with_edits({}).text(), text);
    ASSERT_EQ(doc.base_configs().size(), 1u);
    EXPECT_EQ(doc.base_configs().front().named, "./job.toml");

    // A value is rewritten in place; a boolean flag turns into its negation; a new key is a new flag.
    const auto edited = doc.with_edits({{"parallelism.tensor_parallel_degree", Value::number(4)},
                                        {"training.steps", Value::number(10)},
                                        {"compile.enable", Value::boolean(false)},
                                        {"metrics.enable_tensorboard", Value::boolean(true)},
                                        {"training.local_batch_size", Value::number(2)},
                                        {"activation_checkpoint.mode", Value::string("full")}});
    EXPECT_EQ(edited.text(),
              "torchrun --nproc_per_node=8 -m torchtitan.train --job.config_file ./job.toml \\\n"
              "    --parallelism.tensor-parallel-degree 4 \\\n"
              "    --training.steps=10 \\\n"
              "    --compile.no_enable \\\n"
              "    --metrics.enable_tensorboard \\\n"
              "    --training.local_batch_size 2 \\\n"
              "    --activation_checkpoint.mode full\n");
    EXPECT_EQ(edited.find("compile.enable")->as_bool(), false);
    EXPECT_EQ(edited.find("training.local_batch_size")->as_number(), 2);
    for (const auto& refused : std::vector<recipe::Edit>{{"training.steps", Value::null()},
                                                         {"compile.enable", Value::number(3)},
                                                         {"training.dataset", Value::string("c4;reboot")}})
        EXPECT_THROW((void)doc.with_edits({refused}), InputError) << refused.path;
}

/// Every key of the shared base configs (NeMo's, MaxText's) set by one override each.
TEST(RecipeFormats, EveryKeyOfASharedBaseConfigIsSetByOneOverride) {
    const auto shared = test_support::shared_dir();
    if (shared.empty()) GTEST_SKIP() << "../shared is absent: no shared base config to override";
    int edits = 0;
    for (const auto& base : {shared / "recipes/nemo/megatron_gpt_config.yaml", shared / "recipes/maxtext/base.yml"}) {
        const std::string text = "python3 -m pkg.train " + base.string() + " \\\n    run_name=check\n";
        const auto doc = Document::parse(text, "run.sh");
        std::vector<const recipe::Leaf*> keys;
        for (const auto& leaf : doc.leaves())
            if (leaf.origin == recipe::Origin::base && leaf.value.kind() != Value::Kind::empty_list &&
                leaf.value.kind() != Value::Kind::empty_map && leaf.path.find('[') == std::string::npos)
                keys.push_back(&leaf);
        // Sampled like the shared recipes' round trip: MaxText's base.yml has hundreds of keys.
        for (std::size_t i = 0; i < keys.size(); i += keys.size() > 150 ? keys.size() / 150 : 1) {
            const auto& leaf = *keys[i];
            const Value value = leaf.value.kind() == Value::Kind::string ? Value::string("edited") : other_than(leaf.value);
            const auto edited = doc.with_edits({{leaf.path, value}});
            ++edits;
            EXPECT_EQ(edited.text(), text.substr(0, text.size() - 1) + " \\\n    " + leaf.path + "=" + value.to_string() + "\n");
            EXPECT_TRUE(edited.find(leaf.path)->same_as(value)) << base << ": " << leaf.path;
        }
    }
    EXPECT_GT(edits, 250);
}

/// Every recipe file in ../shared/recipes in a format attune reads.
std::vector<fs::path> shared_recipe_files() {
    std::vector<fs::path> files;
    const auto shared = test_support::shared_dir();
    if (shared.empty()) return files;
    for (const auto& entry : fs::recursive_directory_iterator(shared / "recipes")) {
        if (recipe::is_recipe_file(entry.path())) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

TEST(RecipeFormats, EverySharedRecipeRoundTripsAndAnEditChangesOnlyItsValue) {
    const auto files = shared_recipe_files();
    if (files.empty()) GTEST_SKIP() << "../shared is absent: the shared recipes are not round-tripped";
    int edits = 0;
    for (const auto& file : files) {
        const auto text = util::read_text_file(file);
        const auto doc = Document::load(file);
        EXPECT_EQ(doc.with_edits({}).text(), text) << file;
        std::vector<const recipe::Leaf*> written;
        for (const auto& leaf : doc.leaves())
            if (leaf.origin == recipe::Origin::written && leaf.value.kind() != Value::Kind::empty_list &&
                leaf.value.kind() != Value::Kind::empty_map && !leaf.value.is_null() &&
                leaf.written.find('\n') == std::string::npos)
                written.push_back(&leaf);
        // Large files (MaxText's base.yml) are sampled; every key of the others is edited.
        const std::size_t stride = written.size() > 150 ? written.size() / 150 : 1;
        for (std::size_t i = 0; i < written.size(); i += stride) {
            const auto& leaf = *written[i];
            Document edited = doc;
            try {
                edited = doc.with_edits({{leaf.path, other_than(leaf.value)}});
            } catch (const InputError& e) {
                // A value copied by an anchor or written as a block scalar is refused, not garbled.
                EXPECT_NE(std::string(e.what()).find("cannot set"), std::string::npos) << e.what();
                continue;
            }
            ++edits;
            // The YAML reader would also read invalid JSON back: JSON must stay JSON.
            if (doc.format() == recipe::Format::json)
                EXPECT_TRUE(nlohmann::json::accept(edited.text())) << file << ": editing " << leaf.path;
            if (edited.find(leaf.path) == nullptr) {
                // A launch script turns a flag off by removing it (with its line when alone on it).
                EXPECT_EQ(doc.format(), recipe::Format::shell) << file << ": editing " << leaf.path << " removed it";
                EXPECT_EQ(leaf.value.as_bool(), std::optional<bool>(true)) << file << ": " << leaf.path;
            } else {
                const auto [first, last] = changed_region(text, edited.text());
                EXPECT_EQ(text.substr(first, last - first).find('\n'), std::string::npos)
                    << file << ": editing " << leaf.path << " rewrote more than its value";
                EXPECT_TRUE(edited.find(leaf.path)->same_as(other_than(leaf.value))) << file << ": " << leaf.path;
            }
            for (const auto& other : doc.leaves())
                if (other.path != leaf.path && other.origin == recipe::Origin::written) {
                    const auto* after = edited.find(other.path);
                    EXPECT_TRUE(after != nullptr && after->same_as(other.value)) << file << ": editing " << leaf.path << " moved " << other.path;
                }
        }
    }
    EXPECT_GT(edits, 500);
}

}  // namespace

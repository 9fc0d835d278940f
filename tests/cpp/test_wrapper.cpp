// Tests of bindings/cpp/cputrain.hpp against the built library: errors as
// exceptions, typed and text access, parse, JSON, copy and move; models and
// batches (RAII, sizes checked, views into the model, save and load); the
// optimizer, datasets and the trainer with std::function callbacks. No
// framework: each CHECK counts, the last line says "N passed, M failed".
#include "cputrain.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ftw.h>
#include <iostream>
#include <sstream>
#include <string>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

static int passed = 0, failed = 0;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (cond) {                                                                 \
            passed++;                                                               \
        } else {                                                                    \
            failed++;                                                               \
            std::cerr << __FILE__ << ":" << __LINE__ << ": CHECK failed: " #cond "\n"; \
        }                                                                           \
    } while (0)

// Run `body`, expecting cputrain::error with `status` whose text holds `needle`.
template <typename F>
static void expect_error(F body, ct_status status, const std::string &needle, int line) {
    try {
        body();
        failed++;
        std::cerr << __FILE__ << ":" << line << ": no exception thrown\n";
    } catch (const cputrain::error &e) {
        bool ok = e.status() == status && std::string(e.what()).find(needle) != std::string::npos &&
                  e.message().find(needle) != std::string::npos &&
                  std::string(e.what()).find(ct_status_name(status)) == 0;
        if (ok) {
            passed++;
        } else {
            failed++;
            std::cerr << __FILE__ << ":" << line << ": got " << e.status_name() << " \""
                      << e.what() << "\", wanted " << ct_status_name(status) << " mentioning '"
                      << needle << "'\n";
        }
    }
}
#define EXPECT_ERROR(body, status, needle) \
    expect_error([&]() { body; }, status, needle, __LINE__)

typedef std::vector<std::string> strings;

static void test_errors() {
    cputrain::training_args args;
    EXPECT_ERROR(args.set("no_such_field", "1"), CT_ERR_NOT_FOUND, "no_such_field");
    EXPECT_ERROR(args.get_int("bf16"), CT_ERR_INVALID_ARG, "bf16");
    EXPECT_ERROR(args.set("seed", "abc"), CT_ERR_INVALID_ARG, "seed");
    EXPECT_ERROR(args.get_int("data_seed"), CT_ERR_STATE, "data_seed");
    EXPECT_ERROR(cputrain::check(CT_ERR_IO), CT_ERR_IO, "");
    try {
        args.set_string("lr_scheduler_type", "bogus");
        CHECK(false);
    } catch (const cputrain::error &e) {
        CHECK(std::strcmp(e.status_name(), "CT_ERR_INVALID_ARG") == 0);
        CHECK(dynamic_cast<const std::runtime_error *>(&e) != nullptr);
    }
    cputrain::check(CT_OK);  // does not throw
    CHECK(cputrain::version() == CT_VERSION_STRING);
    CHECK(cputrain::kernel_isa() == ct_kernel_isa());
}

static void test_typed_and_text_access() {
    cputrain::training_args args;
    CHECK(std::fabs(args.get_float("learning_rate") - 5e-5) < 1e-18);
    CHECK(args.get_bool("bf16") == false);
    CHECK(args.get_int("seed") == 42);
    CHECK(!args.is_set("output_dir"));

    args.set_bool("bf16", true);
    args.set_int("seed", -7);
    args.set_float("learning_rate", 3e-5);
    args.set_string("output_dir", "out/dir");
    args.set_string("lr_scheduler_type", "cosine");
    CHECK(args.get_bool("bf16"));
    CHECK(args.get_int("seed") == -7);
    CHECK(args.get_float("learning_rate") == 3e-5);
    CHECK(args.get_string("output_dir") == "out/dir");
    CHECK(args.get_string("lr_scheduler_type") == "cosine");
    CHECK(args.is_set("output_dir"));
    args.unset("output_dir");
    CHECK(!args.is_set("output_dir"));
    EXPECT_ERROR(args.get_string("output_dir"), CT_ERR_STATE, "output_dir");

    args.set("learning_rate", "1e-4");
    CHECK(args.get("learning_rate") == "0.0001");
    CHECK(args.get("bf16") == "True");
    CHECK(args.get("output_dir") == "None");
    std::string long_path(300, 'p');  // longer than the first buffer
    args.set_string("output_dir", long_path);
    CHECK(args.get("output_dir") == long_path);
    EXPECT_ERROR(args.get("nope"), CT_ERR_NOT_FOUND, "nope");
}

static void test_field_table_and_help() {
    std::vector<cputrain::field_info> fields = cputrain::training_args::fields();
    CHECK(fields.size() == ct_args_field_count());
    bool found = false;
    for (size_t i = 0; i < fields.size(); i++) {
        if (fields[i].name == "lr_scheduler_type") {
            found = true;
            CHECK(fields[i].type == CT_ARG_CHOICE);
            CHECK(fields[i].choices.find("cosine") != std::string::npos);
            CHECK(fields[i].default_value == "linear");
        }
    }
    CHECK(found);
    std::string help = cputrain::training_args::help();
    CHECK(help.find("--learning_rate") != std::string::npos);
    // the fate table: fields first, then names with no effect or refused
    std::vector<cputrain::known_argument> known = cputrain::training_args::known_arguments();
    CHECK(known.size() > fields.size());
    CHECK(known[0].name == fields[0].name && known[0].fate == CT_ARG_IMPLEMENTED);
    bool refused = false;
    for (size_t i = 0; i < known.size(); i++)
        if (known[i].name == "push_to_hub") {
            refused = known[i].fate == CT_ARG_REFUSED &&
                      known[i].reason.find("Hub's CLI") != std::string::npos;
        }
    CHECK(refused);
    cputrain::training_args args;
    EXPECT_ERROR(args.set("push_to_hub", "true"), CT_ERR_UNSUPPORTED, "Hub's CLI");
    args.set("push_to_hub", "false");
}

static void test_parse() {
    cputrain::training_args args;
    strings rest = args.parse({"--bf16", "--learning_rate", "3e-5", "--output_dir", "o",
                               "--model_name_or_path", "bert"});
    CHECK(args.get_bool("bf16"));
    CHECK(args.get("learning_rate") == "3e-05");
    CHECK(rest == (strings{"--model_name_or_path", "bert"}));
    CHECK(args.unparsed() == rest);
    CHECK(args.parse({}).empty());
    // argparse's abbreviations, the caller's own names among them
    strings full = args.parse({"--learning_rat", "3e-5", "--max_seq", "64"}, {"max_seq_length"});
    CHECK(full.size() == 2 && full[0] == "--max_seq_length" && full[1] == "64");
    EXPECT_ERROR(args.parse({"--see", "1"}, {"seedling"}), CT_ERR_INVALID_ARG,
                 "could match --seed, --seedling");
    CHECK(cputrain::training_args::closest_name("learning_rte") == "learning_rate");
    CHECK(cputrain::training_args::closest_name("zzzzzzzzzz").empty());

    // A failed parse leaves everything as it was.
    EXPECT_ERROR(args.parse({"--seed", "1", "--learning_rate", "fast"}), CT_ERR_INVALID_ARG,
                 "learning_rate");
    CHECK(args.get_int("seed") == 42);
    EXPECT_ERROR(args.parse({"--warmup_ratio", "2"}), CT_ERR_INVALID_ARG, "warmup_ratio");
    CHECK(args.get_float("warmup_ratio") == 0.0);
    args.validate();
}

static std::string temp_dir() {
    char tmpl[] = "/tmp/cputrain-cpp-XXXXXX";
    const char *dir = mkdtemp(tmpl);
    return dir ? dir : "";
}

static void test_json() {
    std::string dir = temp_dir();
    CHECK(!dir.empty());
    std::string path = dir + "/training_args.json";
    {
        cputrain::training_args args;
        args.parse({"--bf16", "--seed", "5", "--output_dir", "o"});
        args.save_json(path);
        cputrain::training_args loaded;
        CHECK(loaded.load_json(path).empty());
        CHECK(loaded.get_bool("bf16"));
        CHECK(loaded.get_int("seed") == 5);
        CHECK(loaded.get_string("output_dir") == "o");
    }
    std::string extra = dir + "/extra.json";
    {
        std::ofstream f(extra.c_str());
        f << "{\"seed\": 9, \"model_name_or_path\": \"bert\"}\n";
    }
    cputrain::training_args args;
    CHECK(args.load_json(extra) == (strings{"--model_name_or_path", "bert"}));
    CHECK(args.get_int("seed") == 9);
    EXPECT_ERROR(args.load_json(dir + "/absent.json"), CT_ERR_IO, "absent.json");
    std::remove(path.c_str());
    std::remove(extra.c_str());
    rmdir(dir.c_str());
}

static void test_copy_and_move() {
    cputrain::training_args a;
    a.set_int("seed", 1);
    cputrain::training_args b(a);  // a copy: independent values
    b.set_int("seed", 2);
    CHECK(a.get_int("seed") == 1 && b.get_int("seed") == 2);

    cputrain::training_args c(std::move(b));
    CHECK(b.get() == nullptr);
    CHECK(c.get_int("seed") == 2);
    EXPECT_ERROR(b.get_int("seed"), CT_ERR_INVALID_ARG, "args");

    b = c;  // assignment into a moved-from object
    CHECK(b.get_int("seed") == 2 && b.get() != c.get());
    a = std::move(c);
    CHECK(a.get_int("seed") == 2);
    cputrain::training_args &same = a;
    a = same;  // self-assignment keeps the values
    CHECK(a.get_int("seed") == 2);

    ct_args *raw = a.release();
    CHECK(a.get() == nullptr && raw != nullptr);
    cputrain::training_args adopted(raw);
    CHECK(adopted.get_int("seed") == 2);
}

// ---- models -------------------------------------------------------------------

static const int MB = 2, MT = 6;
static const std::vector<std::int32_t> IDS = {2, 17, 33, 5, 9, 3, 2, 41, 8, 3, 0, 0};
static const std::vector<std::int32_t> TYPES = {0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0};
static const std::vector<std::int32_t> MASK = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};

static void test_batch() {
    cputrain::batch b(MB, MT, IDS, TYPES, MASK);
    CHECK(b.size() == MB && b.seq_len() == MT);
    b.set_positions({1, 2}, {3, 2});
    b.set_labels({1, 0});
    EXPECT_ERROR(b.set_positions({1}, {1, 2}), CT_ERR_INVALID_ARG, "start_positions has 1 values");
    EXPECT_ERROR(b.set_inputs(MB, MT, IDS, {0, 1}), CT_ERR_INVALID_ARG, "token_type_ids");
    EXPECT_ERROR(b.set_inputs(MB, MT, std::vector<std::int32_t>(5, 1)), CT_ERR_INVALID_ARG,
                 "input_ids has 5 values; the batch needs 12");
    EXPECT_ERROR(b.set_labels({1, 2, 3}), CT_ERR_INVALID_ARG, "labels");
    std::vector<std::int32_t> bad_mask = MASK;
    bad_mask[3] = 7;
    EXPECT_ERROR(b.set_inputs(MB, MT, IDS, TYPES, bad_mask), CT_ERR_INVALID_ARG, "attention_mask");
    CHECK(b.size() == MB);  // a failed call changes nothing

    cputrain::batch empty;
    CHECK(empty.size() == 0);
    EXPECT_ERROR(empty.set_labels({1}), CT_ERR_STATE, "ct_batch_set_inputs");

    cputrain::batch moved(std::move(b));
    CHECK(b.get() == nullptr && moved.size() == MB);
    EXPECT_ERROR(b.size(), CT_ERR_INVALID_ARG, "empty cputrain::batch");
    b = std::move(moved);
    CHECK(b.size() == MB && moved.get() == nullptr);
}

static void test_model_basics() {
    cputrain::model m = cputrain::model::create("bert-test", CT_TASK_QUESTION_ANSWERING, 7);
    CHECK(m.architecture() == "BertForQuestionAnswering");
    CHECK(m.task() == CT_TASK_QUESTION_ANSWERING);
    CHECK(m.config_int("hidden_size") == 32);
    CHECK(m.config_int("vocab_size") == 128);
    EXPECT_ERROR(m.config_int("dim"), CT_ERR_NOT_FOUND, "dim");
    CHECK(m.precision() == CT_PRECISION_FP32);
    CHECK(m.threads() >= 1);
    CHECK(m.new_tensors().empty());

    std::vector<std::string> names = m.tensor_names();
    CHECK(names.size() == m.tensor_count());
    CHECK(names.front() == "bert.embeddings.word_embeddings.weight");
    CHECK(names.back() == "qa_outputs.bias");
    std::size_t total = 0;
    for (std::size_t i = 0; i < m.tensor_count(); i++)
        total += m.tensor(i).numel;
    CHECK(total == m.num_parameters());
    cputrain::tensor_info qa = m.tensor("qa_outputs.weight");
    CHECK(qa.shape.size() == 2 && qa.shape[0] == 2 && qa.shape[1] == 32 && qa.numel == 64);
    CHECK(qa.decays && !m.tensor("qa_outputs.bias").decays);
    EXPECT_ERROR(m.tensor("qa_outputs.kernel"), CT_ERR_NOT_FOUND, "qa_outputs.kernel");
    EXPECT_ERROR(m.data(m.tensor_count()), CT_ERR_INVALID_ARG, "out of range");
    CHECK(m.data("qa_outputs.weight") == m.data(m.tensor_index("qa_outputs.weight")));

    EXPECT_ERROR(m.logits(), CT_ERR_STATE, "no forward pass");
    m.set_training(false);
    cputrain::batch b(MB, MT, IDS, TYPES, MASK);
    m.predict(b);
    cputrain::logits_view v = m.logits();
    CHECK(v.shape.size() == 3 && v.shape[0] == MB && v.shape[1] == MT && v.shape[2] == 2);
    CHECK(v.size() == static_cast<std::size_t>(MB * MT * 2));
    EXPECT_ERROR(m.forward_backward(b), CT_ERR_STATE, "positions");

    b.set_positions({1, 2}, {3, 2});
    m.zero_grad();
    float loss = m.forward_backward(b);
    CHECK(std::isfinite(loss) && loss > 0);
    CHECK(m.forward(b) == loss);  // eval mode: the same pass again
    float *g = m.grad("qa_outputs.weight");
    float g0 = g[0];
    CHECK(g0 != 0);
    m.forward_backward(b, 0.5f);  // accumulates half as much again
    CHECK(std::fabs(g[0] - 1.5f * g0) <= 1e-5f * std::fabs(g0));
    m.zero_grad();
    CHECK(g[0] == 0);

    // bf16: a different, close result; back to fp32: the same as before.
    m.set_precision(CT_PRECISION_BF16);
    CHECK(m.precision() == CT_PRECISION_BF16);
    float loss_bf16 = m.forward(b);
    CHECK(std::fabs(loss_bf16 - loss) < 2e-2f * loss);
    m.set_precision(CT_PRECISION_FP32);
    CHECK(m.forward(b) == loss);

    // Writing a parameter, then params_changed: the start logits move with the bias.
    m.predict(b);
    float start0 = m.logits()[0];
    m.data("qa_outputs.bias")[0] += 3.0f;
    m.params_changed();
    m.predict(b);
    CHECK(std::fabs(m.logits()[0] - (start0 + 3.0f)) < 1e-5f);

    // Training mode: (seed, step) reproduces dropout.
    m.set_training(true);
    m.set_seed(11, 4);
    float a1 = m.forward(b);
    m.set_seed(11, 4);
    float a2 = m.forward(b);
    m.set_seed(11, 5);
    float a3 = m.forward(b);
    CHECK(a1 == a2 && a1 != a3);

    m.set_threads(1);
    CHECK(m.threads() == 1);
    EXPECT_ERROR(m.set_threads(-3), CT_ERR_INVALID_ARG, "threads");
}

static void test_model_errors_and_move() {
    EXPECT_ERROR(cputrain::model::create("bert-huge"), CT_ERR_NOT_FOUND, "bert-huge");
    EXPECT_ERROR(cputrain::model::load("/nonexistent/cputrain-model"), CT_ERR_IO, "cputrain-model");
    try {
        cputrain::model::load("/nonexistent/cputrain-model");
    } catch (const cputrain::error &e) {
        CHECK(e.message().find("cputrain-model") != std::string::npos);
    }

    cputrain::model a = cputrain::model::create("distilbert-test", CT_TASK_MASKED_LM, 1);
    cputrain::model b(std::move(a));
    CHECK(a.get() == nullptr && b.architecture() == "DistilBertForMaskedLM");
    EXPECT_ERROR(a.architecture(), CT_ERR_INVALID_ARG, "empty cputrain::model");
    EXPECT_ERROR(a.num_parameters(), CT_ERR_INVALID_ARG, "empty cputrain::model");
    a = std::move(b);
    CHECK(a.get() != nullptr && b.get() == nullptr);

    cputrain::batch batch(MB, MT, IDS, TYPES, MASK);
    std::vector<std::int32_t> labels(IDS.size(), -100);
    labels[2] = 33;
    labels[7] = 41;
    batch.set_labels(labels);
    CHECK(a.forward_backward(batch) > 0);
    cputrain::logits_view v = a.logits();
    CHECK(v.shape.size() == 3 && v.shape[2] == 128);

    ct_model *raw = a.release();
    CHECK(a.get() == nullptr && raw != nullptr);
    cputrain::model adopted(raw);
    CHECK(adopted.task() == CT_TASK_MASKED_LM);
}

static int remove_entry(const char *path, const struct stat *, int, struct FTW *) {
    return std::remove(path);
}
static void remove_tree(const std::string &dir) { nftw(dir.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS); }
static bool exists(const std::string &path) {
    struct stat sb;
    return stat(path.c_str(), &sb) == 0;
}

static void test_model_save_load() {
    std::string dir = temp_dir();
    CHECK(!dir.empty());
    std::vector<float> before;
    {
        cputrain::model m =
            cputrain::model::create("bert-test", CT_TASK_SEQUENCE_CLASSIFICATION, 3);
        m.save(dir);
        std::size_t i = m.tensor_index("classifier.weight");
        before.assign(m.data(i), m.data(i) + m.tensor(i).numel);
    }
    {
        cputrain::model m = cputrain::model::load(dir, CT_TASK_SEQUENCE_CLASSIFICATION);
        CHECK(m.architecture() == "BertForSequenceClassification");
        std::size_t i = m.tensor_index("classifier.weight");
        CHECK(std::vector<float>(m.data(i), m.data(i) + m.tensor(i).numel) == before);
        CHECK(m.new_tensors().empty());
    }
    {
        // For another head: the classifier is ignored, qa_outputs is new.
        cputrain::model m = cputrain::model::load(dir, CT_TASK_QUESTION_ANSWERING, 5);
        std::vector<std::string> added = m.new_tensors();
        CHECK(added.size() == 2);
        CHECK(!added.empty() && added[0].find("qa_outputs") == 0);
    }
    cputrain::model m = cputrain::model::create("bert-test");
    m.save(dir + "/new/deeper"); // made, as save_pretrained does
    CHECK(exists(dir + "/new/deeper/model.safetensors"));
    EXPECT_ERROR(m.save(dir + "/config.json/under_a_file"), CT_ERR_IO, "config.json");
    remove_tree(dir);
}


// ---- optimizer, datasets, trainer ------------------------------------------------

static void test_optimizer() {
    std::string dir = temp_dir();
    cputrain::model m = cputrain::model::create("bert-test", CT_TASK_QUESTION_ANSWERING, 2);
    m.set_training(false);
    cputrain::training_args args;
    args.set_float("learning_rate", 1e-3);
    args.set_float("max_grad_norm", 1.0);
    cputrain::optimizer opt(m, args);
    CHECK(opt.owns() && opt.step_count() == 0);
    CHECK(opt.memory_bytes() == 2 * m.memory_bytes("parameters"));
    CHECK(m.memory_bytes("parameters") >= 4 * m.num_parameters());
    CHECK(m.memory_bytes("gradients") == m.memory_bytes("parameters"));
    CHECK(cputrain::model::memory_categories().size() == 5);
    CHECK(cputrain::model::memory_categories().front() == "parameters");
    EXPECT_ERROR(m.memory_bytes("moments"), CT_ERR_NOT_FOUND, "moments");
    cputrain::batch b(MB, MT, IDS, TYPES, MASK);
    b.set_positions({1, 2}, {3, 2});
    m.forward_backward(b);
    EXPECT_ERROR(opt.step(), CT_ERR_STATE, "ct_optim_set_total_steps");
    EXPECT_ERROR(opt.set_total_steps(0), CT_ERR_INVALID_ARG, "total steps");
    opt.set_total_steps(10);
    double norm = opt.grad_norm();
    CHECK(norm > 0);
    CHECK(opt.step() == norm);
    CHECK(opt.step_count() == 1);
    CHECK(opt.grad_norm() == 0.0);  // the step zeroes the gradients
    CHECK(opt.lr() == opt.lr_at(1));
    CHECK(std::fabs(opt.lr_at(0) - 1e-3) < 1e-15);
    CHECK(std::fabs(opt.lr_at(10)) < 1e-15);  // linear down to 0
    EXPECT_ERROR(opt.set_decay(100000, true), CT_ERR_INVALID_ARG, "tensors");
    opt.set_decay(m.tensor_index("qa_outputs.bias"), true);

    // A non-finite gradient: numeric_error with the norm, nothing counted.
    m.forward_backward(b);
    m.grad("qa_outputs.bias")[0] = std::nanf("");
    try {
        opt.step();
        CHECK(false);
    } catch (const cputrain::numeric_error &e) {
        CHECK(std::isnan(e.grad_norm()));
        CHECK(e.status() == CT_ERR_NUMERIC);
        CHECK(std::string(e.what()).find("CT_ERR_NUMERIC") == 0);
    }
    CHECK(opt.step_count() == 1);

    std::string path = dir + "/optimizer.safetensors";
    opt.save(path);
    cputrain::optimizer fresh(m, args);
    fresh.load(path);
    CHECK(fresh.step_count() == 1);
    EXPECT_ERROR(fresh.load(dir + "/absent.safetensors"), CT_ERR_IO, "absent.safetensors");

    cputrain::optimizer moved(std::move(fresh));
    CHECK(fresh.get() == nullptr && moved.step_count() == 1);
    EXPECT_ERROR(fresh.lr(), CT_ERR_INVALID_ARG, "empty cputrain::optimizer");
    remove_tree(dir);
}

static const int DT = 8;

static std::vector<std::int32_t> example_ids(int i) {
    std::vector<std::int32_t> ids(DT);
    for (int k = 0; k < DT; k++)
        ids[k] = 1 + (i * 31 + k * 7) % 127;
    return ids;
}

static cputrain::dataset qa_dataset(int n) {
    cputrain::dataset d(CT_TASK_QUESTION_ANSWERING, DT);
    for (int i = 0; i < n; i++)
        d.add({example_ids(i), {}, {}, {i % 5, i % 5 + 1}});
    return d;
}

static void test_dataset() {
    cputrain::dataset d = qa_dataset(6);
    CHECK(d.size() == 6 && d.seq_len() == DT && d.task() == CT_TASK_QUESTION_ANSWERING);
    CHECK(d.labels_per_example() == 2);
    EXPECT_ERROR(d.add({std::vector<std::int32_t>(3, 1), {}, {}, {0, 1}}), CT_ERR_INVALID_ARG,
                 "input_ids has 3 values; an example needs 8");
    EXPECT_ERROR(d.add({example_ids(0), {}, {}, {0}}), CT_ERR_INVALID_ARG, "labels has 1 values");
    EXPECT_ERROR(d.add({example_ids(0), {0, 1}, {}, {0, 1}}), CT_ERR_INVALID_ARG, "token_type_ids");
    CHECK(d.size() == 6);
    cputrain::batch b = d.make_batch({5, 0, 3});
    CHECK(b.size() == 3 && b.seq_len() == DT);
    EXPECT_ERROR(d.make_batch({6}), CT_ERR_INVALID_ARG, "index 6");

    cputrain::dataset mlm(CT_TASK_MASKED_LM, 4);
    CHECK(mlm.labels_per_example() == 4);
    mlm.add({{1, 2, 3, 4}, {}, {1, 1, 1, 0}, {-100, 2, -100, -100}});
    {
        // the 0.1.0 form, labels second, still works (and warns when compiled)
        cputrain::dataset old(CT_TASK_MASKED_LM, 4);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        old.add({1, 2, 3, 4}, {-100, -100, 3, -100}, {}, {1, 1, 1, 0});
#pragma GCC diagnostic pop
        CHECK(old.size() == 1 && old.labels()[2] == 3);
    }
    CHECK(mlm.labels() == std::vector<std::int32_t>({-100, 2, -100, -100}));
    std::vector<std::int32_t> qa_labels = d.labels(4);
    CHECK(qa_labels.size() == 4 && d.labels(6).empty());
    EXPECT_ERROR(d.labels(5, 2), CT_ERR_INVALID_ARG, "outside the dataset's 6");
    cputrain::dataset moved(std::move(mlm));
    CHECK(mlm.get() == nullptr && moved.size() == 1);
    EXPECT_ERROR(mlm.size(), CT_ERR_INVALID_ARG, "empty cputrain::dataset");
    EXPECT_ERROR(cputrain::dataset(CT_TASK_QUESTION_ANSWERING, 0), CT_ERR_INVALID_ARG, "seq_len");
}

struct callback_failure : std::runtime_error {
    callback_failure() : std::runtime_error("thrown in a callback") {}
};

static cputrain::training_args train_args(const std::string &out) {
    cputrain::training_args args;
    args.set_string("output_dir", out);
    args.set_int("per_device_train_batch_size", 4);
    args.set_int("gradient_accumulation_steps", 2);
    args.set_float("num_train_epochs", 2);
    args.set_float("learning_rate", 1e-3);
    args.set_float("logging_steps", 2);
    args.set_float("save_steps", 3);
    args.set_string("eval_strategy", "steps");
    args.set_float("eval_steps", 3);
    return args;
}

static void test_trainer() {
    std::string dir = temp_dir();
    cputrain::dataset train = qa_dataset(24);  // 6 micro-batches of 4: 3 steps per epoch
    cputrain::dataset eval = qa_dataset(5);
    cputrain::model m = cputrain::model::create("bert-test", CT_TASK_QUESTION_ANSWERING, 1);
    cputrain::training_args args = train_args(dir + "/out");

    std::vector<std::pair<ct_event, std::int64_t> > events;
    std::vector<std::string> logs;
    cputrain::trainer before(m, args);
    before.set_train_dataset(train);
    before.on_progress([&](ct_event ev, std::int64_t step, std::int64_t max_steps, double,
                           const char *json) {
        events.push_back(std::make_pair(ev, step));
        CHECK(max_steps == 6);
        if (json)
            logs.push_back(json);
        return false;
    });
    before.on_evaluate([&](cputrain::trainer &t) {
        t.report_metric("eval_loss", t.evaluate_loss(eval));
        t.report_metric("eval_answer", 42);
    });
    EXPECT_ERROR(before.optim(), CT_ERR_STATE, "before train");
    cputrain::trainer t(std::move(before));  // the callbacks move with it
    CHECK(before.get() == nullptr);
    EXPECT_ERROR(before.train(), CT_ERR_INVALID_ARG, "empty cputrain::trainer");
    t.train();
    CHECK(t.global_step() == 6 && t.max_steps() == 6);
    CHECK(std::isfinite(t.train_loss()) && t.train_loss() > 0);
    CHECK(!events.empty() && events.front().first == CT_EVENT_TRAIN_BEGIN);
    CHECK(!events.empty() && events.back().first == CT_EVENT_TRAIN_END);
    int step_ends = 0, evaluations = 0, saves = 0;
    for (std::size_t i = 0; i < events.size(); i++) {
        step_ends += events[i].first == CT_EVENT_STEP_END;
        evaluations += events[i].first == CT_EVENT_EVALUATE;
        saves += events[i].first == CT_EVENT_SAVE;
    }
    CHECK(step_ends == 6 && evaluations == 2 && saves == 2);
    std::string history = t.log_history();
    CHECK(history.find("\"eval_answer\": 42") != std::string::npos);
    CHECK(history.find("\"learning_rate\"") != std::string::npos);
    bool saw_loss = false;
    for (std::size_t i = 0; i < logs.size(); i++)
        saw_loss = saw_loss || logs[i].find("\"loss\": ") != std::string::npos;
    CHECK(saw_loss);
    cputrain::optimizer borrowed = t.optim();
    CHECK(!borrowed.owns() && borrowed.step_count() == 6);
    for (const char *name : {"/out/train_results.json", "/out/trainer_state.json",
                             "/out/model.safetensors", "/out/checkpoint-3/optimizer.safetensors",
                             "/out/checkpoint-6/trainer_state.json"})
        CHECK(exists(dir + name));

    // Stopping from the progress callback.
    cputrain::model m2 = cputrain::model::create("bert-test", CT_TASK_QUESTION_ANSWERING, 1);
    cputrain::training_args args2 = train_args(dir + "/stop");
    args2.set_string("eval_strategy", "no");
    cputrain::trainer stop(m2, args2);
    stop.set_train_dataset(train);
    stop.on_progress([](ct_event ev, std::int64_t step, std::int64_t, double, const char *) {
        return ev == CT_EVENT_STEP_END && step == 2;
    });
    EXPECT_ERROR(stop.train(), CT_ERR_CANCELLED, "step 2");
    CHECK(stop.global_step() == 2);

    // An exception in a callback is rethrown by train(), not lost in C.
    stop.on_progress([](ct_event ev, std::int64_t step, std::int64_t, double, const char *) -> bool {
        if (ev == CT_EVENT_LOG && step == 4)
            throw callback_failure();
        return false;
    });
    bool rethrown = false;
    try {
        stop.train();
    } catch (const callback_failure &) {
        rethrown = true;
    }
    CHECK(rethrown && stop.global_step() == 4);

    cputrain::training_args args3 = train_args(dir + "/eval-throws");
    cputrain::trainer eval_throws(m2, args3);
    eval_throws.set_train_dataset(train);
    eval_throws.on_evaluate([](cputrain::trainer &) { throw callback_failure(); });
    rethrown = false;
    try {
        eval_throws.train();
    } catch (const callback_failure &) {
        rethrown = true;
    }
    CHECK(rethrown && eval_throws.global_step() == 3);
    // A cputrain::error from inside the evaluation comes back as itself.
    cputrain::dataset bad(CT_TASK_QUESTION_ANSWERING, DT);
    bad.add({std::vector<std::int32_t>(DT, 500), {}, {}, {0, 0}});
    eval_throws.on_evaluate([&](cputrain::trainer &tr) { tr.evaluate_loss(bad); });
    EXPECT_ERROR(eval_throws.train(), CT_ERR_INVALID_ARG, "vocabulary");

    // cancel(): stops at the next step with a checkpoint (the flag would do
    // the same from a signal handler).
    cputrain::training_args args5 = train_args(dir + "/cancel");
    args5.set_string("eval_strategy", "no");
    cputrain::trainer cancelled(m2, args5);
    cancelled.set_train_dataset(train);
    cancelled.on_progress([&](ct_event ev, std::int64_t step, std::int64_t, double, const char *) {
        if (ev == CT_EVENT_STEP_END && step == 4)
            cancelled.cancel();
        return false;
    });
    EXPECT_ERROR(cancelled.train(), CT_ERR_CANCELLED, "after step 4 of 6; checkpoint saved to");
    CHECK(cancelled.global_step() == 4 &&
          exists(dir + "/cancel/checkpoint-4/cputrain_checkpoint_complete"));
    // predict(): eval mode, so twice the same; the shape of the QA head.
    cputrain::trainer::predictions p1 = cancelled.predict(eval), p2 = cancelled.predict(eval);
    CHECK(p1.shape == std::vector<std::int64_t>({5, DT, 2}) && p1.data.size() == 5 * DT * 2);
    CHECK(p1.data == p2.data);

    // The library's terminal printer (stderr is not a terminal here: no bar).
    cputrain::training_args args4 = train_args(dir + "/terminal");
    args4.set_string("eval_strategy", "no");
    args4.set_bool("disable_tqdm", true);
    cputrain::trainer quiet(m2, args4);
    quiet.set_train_dataset(train);
    quiet.progress_to_terminal();
    quiet.on_progress(cputrain::trainer::progress_fn());  // and removed again
    quiet.train();
    CHECK(quiet.global_step() == 6);

    // eval_dataset with compute_metrics: eval_loss and the bare names
    // prefixed; early stopping on a metric that never improves ends
    // training after its patience (evaluations at steps 3 and 6 of 12).
    cputrain::training_args args6 = train_args(dir + "/metrics");
    args6.set_float("num_train_epochs", 4);
    args6.set_string("save_strategy", "steps");
    args6.set_bool("load_best_model_at_end", true);
    args6.set_string("metric_for_best_model", "answer");
    cputrain::trainer scored(m2, args6);
    scored.set_train_dataset(train);
    scored.set_eval_dataset(eval);
    std::vector<std::int64_t> seen_shape;
    scored.on_compute_metrics([&](cputrain::trainer &tr,
                                  const cputrain::trainer::eval_prediction &p) {
        seen_shape = p.shape;
        CHECK(p.n_labels == 10 && p.labels[0] == eval.labels()[0]);
        tr.report_metric("answer", 1.0);
    });
    scored.set_early_stopping(1);
    scored.train();
    CHECK(seen_shape == std::vector<std::int64_t>({5, DT, 2}));
    CHECK(scored.global_step() == 6);
    history = scored.log_history();
    CHECK(history.find("\"eval_answer\": 1") != std::string::npos);
    CHECK(history.find("\"eval_loss\": ") != std::string::npos);
    CHECK(history.find("\"eval_samples_per_second\": ") != std::string::npos);
    EXPECT_ERROR(scored.set_early_stopping(-1), CT_ERR_INVALID_ARG, "negative");

    // Real labels: multi-label rows, kept as added; one kind per dataset.
    cputrain::dataset hot(CT_TASK_SEQUENCE_CLASSIFICATION, DT);
    hot.add_float({example_ids(0), {}, {}, {1.0f, 0.0f, 1.0f}});
    hot.add_float({example_ids(1), {}, {}, {0.0f, 1.0f, 0.0f}});
    CHECK(hot.has_float_labels() && hot.labels_per_example() == 3);
    CHECK(hot.float_labels(1, 1) == std::vector<float>({0.0f, 1.0f, 0.0f}));
    EXPECT_ERROR(hot.add({example_ids(2), {}, {}, {1, 0, 1}}), CT_ERR_INVALID_ARG, "real-valued labels");
    EXPECT_ERROR(hot.labels(), CT_ERR_STATE, "ct_dataset_get_float_labels");
    EXPECT_ERROR(hot.add_float({example_ids(2), {}, {}, {1.0f}}), CT_ERR_INVALID_ARG, "values");
    remove_tree(dir);
}

// One process: the local backend, collectives leave values alone; bad
// options come back as cputrain::error naming the key.
static void test_dist() {
    cputrain::dist d({{"backend", "local"}});
    CHECK(d.rank() == 0 && d.world_size() == 1 && d.backend() == "local");
    float v[3] = {1, 2, 3};
    d.allreduce(v, 3, CT_REDUCE_AVG);
    CHECK(v[0] == 1 && v[2] == 3);
    d.barrier();
    EXPECT_ERROR(cputrain::dist({{"colour", "blue"}}), CT_ERR_INVALID_ARG, "colour");
    cputrain::dist moved(std::move(d));
    CHECK(moved.world_size() == 1);
    EXPECT_ERROR(d.rank(), CT_ERR_INVALID_ARG, "moved from");

    // A plan for another machine prints but cannot be applied.
    cputrain::placement two_sockets(1, 2, 0, "package:2 numa:1 core:4 pu:2");
    CHECK(two_sockets.threads() == 4);
    CHECK(two_sockets.describe().find("rank 1 ->") != std::string::npos);
    cputrain::model m = cputrain::model::create("bert-test");
    EXPECT_ERROR(m.set_placement(two_sockets), CT_ERR_UNSUPPORTED, "not this one");
    cputrain::placement here(0, 1, 1);
    m.set_placement(here);
    CHECK(m.threads() == 1);
}

// ---- the tokenizer, and folders that carry it --------------------------------------

static void write_text(const std::string &path, const std::string &text) {
    std::ofstream f(path.c_str(), std::ios::binary);
    f << text;
}

static void test_tokenizer() {
    std::string dir = temp_dir();
    CHECK(!dir.empty());
    write_text(dir + "/vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n##s\nsat\n"
                                   "caf\xc3\xa9\n");
    cputrain::tokenizer tok(dir);
    CHECK(tok.vocab_size() == 10);
    CHECK(tok.special_token(CT_SPECIAL_CLS) == "[CLS]" && tok.special_id(CT_SPECIAL_SEP) == 3);
    CHECK(tok.token_to_id("cat") == 6 && tok.token_to_id("dog") == -1);
    CHECK(tok.token_to_id(std::string("cat\0x", 5)) == -1);
    CHECK(tok.id_to_token(7) == "##s");
    EXPECT_ERROR(tok.id_to_token(10), CT_ERR_NOT_FOUND, "token id 10");

    // Lowercased and accents stripped: "cafe", which the vocabulary lacks.
    std::vector<cputrain::encoding> one = tok.encode("The cats sat CAF\xc3\x89");
    CHECK(one.size() == 1);
    CHECK(!one.empty() && one[0].input_ids == std::vector<std::int32_t>({2, 5, 6, 7, 8, 1, 3}));
    CHECK(!one.empty() && one[0].size() == 7 && one[0].offsets[2] == std::make_pair(4, 7));
    CHECK(!one.empty() && one[0].byte_offsets[5] == std::make_pair(13, 18) &&
          one[0].offsets[5] == std::make_pair(13, 17));
    CHECK(!one.empty() && one[0].word_ids[0] == -1 && one[0].word_ids[3] == 1);
    std::vector<cputrain::encoding> windows =
        tok.encode("the cat sat the cat sat", true, 5, 1, true);
    CHECK(windows.size() == 3);
    CHECK(windows.size() == 3 && windows[2].input_ids ==
                                     std::vector<std::int32_t>({2, 6, 8, 3, 0}));
    std::vector<cputrain::encoding> pair =
        tok.encode_pair("the cat", "cats sat", CT_TRUNCATION_NONE, 0, 0, false);
    CHECK(pair.size() == 1 && pair[0].input_ids ==
                                  std::vector<std::int32_t>({2, 5, 6, 3, 6, 7, 8, 3}));
    CHECK(pair.size() == 1 && pair[0].token_type_ids ==
                                  std::vector<std::int32_t>({0, 0, 0, 0, 1, 1, 1, 1}));
    std::vector<cputrain::encoding> squad = tok.encode_pair("the", "cat sat", CT_TRUNCATION_ONLY_SECOND, 8);
    CHECK(squad.size() == 1 && squad[0].size() == 8 && squad[0].attention_mask[7] == 0);
    EXPECT_ERROR(tok.encode("caf\xc3"), CT_ERR_INVALID_ARG, "byte offset 3");

    tok.set_option(CT_TOKENIZER_DO_LOWER_CASE, 0);
    CHECK(tok.option(CT_TOKENIZER_DO_LOWER_CASE) == 0);
    EXPECT_ERROR(tok.set_option(CT_TOKENIZER_DO_LOWER_CASE, 7), CT_ERR_INVALID_ARG, "out of range");

    // Saved and loaded back: the same settings and encodings.
    std::string out = dir + "/saved";
    CHECK(mkdir(out.c_str(), 0755) == 0);
    tok.save(out);
    for (const char *name : {"/vocab.txt", "/tokenizer_config.json", "/special_tokens_map.json",
                             "/tokenizer.json"})
        CHECK(exists(out + name));
    cputrain::tokenizer back(out);
    CHECK(back.option(CT_TOKENIZER_DO_LOWER_CASE) == 0);
    CHECK(back.encode("The Cats")[0].input_ids == tok.encode("The Cats")[0].input_ids);
    EXPECT_ERROR(tok.save(dir + "/absent"), CT_ERR_IO, dir + "/absent");
    EXPECT_ERROR(cputrain::tokenizer(dir + "/absent"), CT_ERR_IO, "absent");

    cputrain::tokenizer moved(std::move(back));
    CHECK(back.get() == nullptr && moved.vocab_size() == 10);
    EXPECT_ERROR(back.encode("x"), CT_ERR_INVALID_ARG, "empty cputrain::tokenizer");
    EXPECT_ERROR(back.save(out), CT_ERR_INVALID_ARG, "empty cputrain::tokenizer");

    // A trainer given the tokenizer saves it with the model and in each
    // checkpoint; the folder then loads as a whole: tokenizer and head.
    {
        cputrain::model m = cputrain::model::create("bert-test", CT_TASK_QUESTION_ANSWERING, 1);
        cputrain::dataset train = qa_dataset(8);
        cputrain::training_args args = train_args(dir + "/run");
        args.set_string("eval_strategy", "no");
        args.set_float("save_steps", 1);
        cputrain::trainer t(m, args);
        t.set_train_dataset(train);
        EXPECT_ERROR(t.set_tokenizer(back), CT_ERR_INVALID_ARG, "empty cputrain::tokenizer");
        t.set_tokenizer(tok);
        t.train();
        for (const char *sub : {"/run", "/run/checkpoint-1", "/run/checkpoint-2"})
            for (const char *name : {"/vocab.txt", "/tokenizer.json", "/tokenizer_config.json"})
                CHECK(exists(dir + sub + name));
        cputrain::tokenizer saved(dir + "/run/checkpoint-1");
        CHECK(saved.encode("the cats")[0].input_ids == tok.encode("the cats")[0].input_ids);
        t.clear_tokenizer();
    }
    remove_tree(dir);
}

// model::load(dir) takes the head config.json names; a task given still rules.
static void test_output_lock() {
    std::string top = temp_dir(), dir = top + "/held";
    {
        cputrain::output_lock lock(dir);
        CHECK(lock.held());
        EXPECT_ERROR(cputrain::output_lock again(dir), CT_ERR_BUSY, "in use by another run");
        // a trainer of this process joins it
        cputrain::model m = cputrain::model::create("bert-test", CT_TASK_QUESTION_ANSWERING, 1);
        cputrain::training_args args = train_args(dir);
        args.set_string("eval_strategy", "no");
        cputrain::dataset train = qa_dataset(8);
        cputrain::trainer t(m, args);
        t.set_train_dataset(train);
        t.train();
        cputrain::output_lock moved(std::move(lock));
        CHECK(!lock.held() && moved.held());
        moved.release();
        CHECK(!moved.held());
        cputrain::output_lock free_again(dir);
    }
    {
        cputrain::output_lock after(dir);
    }
    remove_tree(top);
}

static void test_workflow() {
    std::string top = temp_dir();
    cputrain::training_args args = train_args(top + "/wf");
    args.set_string("eval_strategy", "no");
    cputrain::workflow wf("run_qa.py", args);
    CHECK(wf.is_main() && wf.dist() == nullptr);
    wf.check_best_metric({"exact_match", "f1"}); // none asked for
    args.set_string("metric_for_best_model", "eval_accuracy");
    EXPECT_ERROR(wf.check_best_metric({"exact_match", "f1"}), CT_ERR_INVALID_ARG,
                 "reports eval_exact_match, eval_f1");
    wf.check_best_metric({"loss", "accuracy"});
    wf.join();
    CHECK(wf.dist() != nullptr);
    wf.hold_output_dir(true);
    cputrain::model m = cputrain::model::create("bert-test", CT_TASK_QUESTION_ANSWERING, 1);
    cputrain::dataset train = qa_dataset(8);
    cputrain::trainer t(m, args);
    t.set_train_dataset(train);
    t.train();
    wf.save_metrics("eval", {{"eval_f1", 50.0}, {"eval_samples", 8}}, {"eval_samples"});
    wf.write_model_card(t, "extractive question answering", "bert-test", false, "train.json",
                        false, {{"eval_f1", 50.0}});
    std::ifstream card(top + "/wf/README.md");
    std::stringstream text;
    text << card.rdbuf();
    CHECK(text.str().find("- F1: 50.0000") != std::string::npos);
    CHECK(text.str().find("trained from scratch (configuration bert-test)") != std::string::npos);
    EXPECT_ERROR(cputrain::workflow::dataset_file(top, "squad", "train"), CT_ERR_NOT_FOUND,
                 "no train split");
    remove_tree(top);
}

// rendezvous: a peer with the job's secret admitted, a stranger refused.
static void test_rendezvous() {
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    CHECK(bind(lfd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 && listen(lfd, 8) == 0 &&
          getsockname(lfd, reinterpret_cast<sockaddr *>(&a), &len) == 0);
    int port = ntohs(a.sin_port);
    cputrain::rendezvous host("job-b", {{"secret", "the-job-secret-1234"}});
    CHECK(host.has_secret());
    std::string peer;
    int served = -2;
    std::thread t([&] { served = host.accept(lfd, 20, &peer); });
    cputrain::rendezvous member("job-b", {{"secret", "the-job-secret-1234"}});
    int fd = member.connect("127.0.0.1", port, 20);
    t.join();
    CHECK(fd >= 0 && served >= 0 && peer.compare(0, 10, "127.0.0.1:") == 0);
    close(fd);
    close(served);
    int late = -2;
    std::thread t2([&] { late = host.accept(lfd, 3); });
    cputrain::rendezvous stranger("job-b", {{"secret", "not-the-job-secret"}});
    EXPECT_ERROR(stranger.connect("127.0.0.1", port, 3), CT_ERR_DIST, "");
    t2.join();
    CHECK(late == -1);
    close(lfd);
}

// trainer_state: a run's log history read back; a malformed file named.
static void test_trainer_state() {
    std::string top = temp_dir(), dir = top + "/st";
    cputrain::model m = cputrain::model::create("bert-test", CT_TASK_QUESTION_ANSWERING, 1);
    cputrain::training_args args = train_args(dir);
    args.set_string("eval_strategy", "no");
    cputrain::dataset train = qa_dataset(8);
    cputrain::trainer t(m, args);
    t.set_train_dataset(train);
    t.train();
    cputrain::trainer_state state(dir);
    CHECK(state.number("global_step") == static_cast<double>(t.global_step()));
    CHECK(!state.log_history().empty());
    bool has_loss = false;
    for (const cputrain::trainer_state::entry &e : state.log_history())
        for (const std::pair<std::string, double> &kv : e)
            has_loss = has_loss || kv.first == "train_loss";
    CHECK(has_loss);
    EXPECT_ERROR(state.number("best_metric"), CT_ERR_NOT_FOUND, "best_metric");
    write_text(dir + "/trainer_state.json", "{\"log_history\": [{\"loss\": []}]}");
    EXPECT_ERROR(cputrain::trainer_state again(dir), CT_ERR_FORMAT,
                 "log_history[0].loss: expected a number, found an array");
    remove_tree(top);
}

static void test_model_load_head() {
    std::string dir = temp_dir();
    CHECK(!dir.empty());
    cputrain::model::create("bert-test", CT_TASK_SEQUENCE_CLASSIFICATION, 3).save(dir);
    CHECK(cputrain::model::config_task(dir) == CT_TASK_SEQUENCE_CLASSIFICATION);
    CHECK(cputrain::model::config_task(dir + "/config.json") == CT_TASK_SEQUENCE_CLASSIFICATION);
    {
        cputrain::model m = cputrain::model::load(dir);
        CHECK(m.task() == CT_TASK_SEQUENCE_CLASSIFICATION);
        CHECK(m.architecture() == "BertForSequenceClassification" && m.new_tensors().empty());
    }
    {
        cputrain::model m = cputrain::model::load(dir, CT_TASK_MASKED_LM);
        CHECK(m.architecture() == "BertForMaskedLM");
    }
    cputrain::model::create("distilbert-test", CT_TASK_MASKED_LM, 3).save(dir);
    CHECK(cputrain::model::load(dir).architecture() == "DistilBertForMaskedLM");
    // A config.json naming no head must be told which.
    write_text(dir + "/config.json", "{\"model_type\": \"distilbert\", \"vocab_size\": 128, "
               "\"dim\": 32, \"n_layers\": 2, \"n_heads\": 4, \"hidden_dim\": 64, "
               "\"max_position_embeddings\": 64}");
    EXPECT_ERROR(cputrain::model::load(dir), CT_ERR_NOT_FOUND, "architectures");
    CHECK(cputrain::model::load(dir, CT_TASK_MASKED_LM).task() == CT_TASK_MASKED_LM);
    write_text(dir + "/config.json", "{\"model_type\": \"bert\", \"architectures\": [\"BertModel\"]}");
    EXPECT_ERROR(cputrain::model::load(dir), CT_ERR_UNSUPPORTED, "BertModel");

    // Labels for a new head, saved and read back by name.
    cputrain::model::options l;
    l.names = {"O", "B-PER", "I-PER"};
    cputrain::model ner = cputrain::model::create("bert-test", CT_TASK_TOKEN_CLASSIFICATION, 3, l);
    CHECK(ner.label_name(1) == "B-PER" && ner.config_int("num_labels") == 3);
    EXPECT_ERROR(ner.label_name(3), CT_ERR_INVALID_ARG, "outside");
    ner.save(dir);
    CHECK(cputrain::model::load(dir).label_name(2) == "I-PER");
    // Its 3-tag classifier under a 2-label sequence head: refused naming
    // the tensor, or with ignore_mismatched_sizes initialised and listed.
    cputrain::model::options two;
    two.num_labels = 2;
    EXPECT_ERROR(cputrain::model::load(dir, CT_TASK_SEQUENCE_CLASSIFICATION, 3, two),
                 CT_ERR_FORMAT, "classifier.weight");
    two.ignore_mismatched_sizes = true;
    cputrain::model glue = cputrain::model::load(dir, CT_TASK_SEQUENCE_CLASSIFICATION, 3, two);
    std::vector<std::string> fresh = glue.new_tensors();
    CHECK(glue.config_int("num_labels") == 2 &&
          std::find(fresh.begin(), fresh.end(), "classifier.weight") != fresh.end() &&
          std::find(fresh.begin(), fresh.end(), "bert.pooler.dense.weight") != fresh.end());
    l.problem_type = "regression";
    EXPECT_ERROR(cputrain::model::create("bert-test", CT_TASK_TOKEN_CLASSIFICATION, 3, l),
                 CT_ERR_INVALID_ARG, "problem_type is for sequence classification");
    CHECK(cputrain::model::create("bert-test", CT_TASK_SEQUENCE_CLASSIFICATION, 3)
              .label_name(1) == "LABEL_1");
    remove_tree(dir);
}

static void test_metrics() {
    using namespace cputrain::metrics;
    const std::vector<std::int32_t> pred = {1, 0, 1, 1, 0, 0}, ref = {1, 0, 0, 1, 1, 0};
    CHECK(accuracy(pred, ref) == 4.0 / 6);
    CHECK(f1(pred, ref) == 2.0 / 3);  // tp 2, fp 1, fn 1
    CHECK(std::fabs(matthews(pred, ref, 2) - 1.0 / 3) < 1e-15);
    CHECK(std::fabs(spearman({1, 2, 3}, {10, 30, 20}) - 0.5) < 1e-15);
    CHECK(std::isnan(pearson({1, 1}, {1, 2})));
    EXPECT_ERROR(f1({0, 3}, {0, 1}), CT_ERR_INVALID_ARG, "predictions[1] = 3");
    EXPECT_ERROR(accuracy({0}, {0, 1}), CT_ERR_INVALID_ARG, "differ in size");

    seqeval s({"O", "B-PER", "I-PER", "B-LOC"});
    s.add({1, 2, 0, 3}, {1, 2, 0, 1});  // PER right, LOC predicted where a PER is
    double acc = 0;
    entity_scores all = s.overall(&acc);
    CHECK(all.precision == 0.5 && all.recall == 0.5 && all.number == 2 && acc == 0.75);
    auto types = s.types();
    CHECK(types.size() == 2 && types[0].first == "LOC" && types[1].first == "PER");
    CHECK(types[0].second.number == 0 && types[1].second.recall == 0.5);
    // the default mode reads any tag as seqeval does; strict IOB2 refuses
    seqeval pos({"O", "NN", "."});
    EXPECT_ERROR(seqeval({"O", "X-PER"}, CT_SEQEVAL_STRICT_IOB2), CT_ERR_INVALID_ARG,
                 "\"X-PER\"");
}

static void test_hub() {
    // a local folder is itself; a Hub id offline and not cached is refused
    // naming what was looked at; a bad option names itself
    std::string dir = temp_dir();
    CHECK(cputrain::model_folder(dir) == dir);
    cputrain::hub_options o;
    o.cache_dir = dir + "/cache";
    o.local_files_only = 1;
    try {
        cputrain::model_folder("org/never-cached", o);
        CHECK(false);
    } catch (const cputrain::error &e) {
        CHECK(e.status() == CT_ERR_NOT_FOUND);
        CHECK(std::string(e.what()).find("not in the Hub cache") != std::string::npos);
    }
    o.repo_type = "space";
    try {
        cputrain::hub_download("org/x", "config.json", o);
        CHECK(false);
    } catch (const cputrain::error &e) {
        CHECK(e.status() == CT_ERR_INVALID_ARG);
        CHECK(std::string(e.what()).find("repo_type") != std::string::npos);
    }
}

static void test_table() {
    // a CSV and its cells; a list cell from JSON lines; a dataset not cached offline
    std::string dir = temp_dir();
    write_text(dir + "/t.csv", "sentence,label\nhello world,1\n\"a, b\",0\n");
    cputrain::table t = cputrain::table::load(dir + "/t.csv");
    CHECK(t.rows() == 2 && t.columns() == 2);
    CHECK(t.column_name(0) == "sentence" && t.column_index("label") == 1);
    CHECK(t.column_type(1) == CT_VALUE_INT);
    CHECK(t.cell(1, 0).text == "a, b" && t.cell(0, 1).text == "1");
    write_text(dir + "/t.jsonl", "{\"tokens\": [\"EU\", \"rejects\"], \"id\": 7}\n");
    cputrain::table j = cputrain::table::load(dir + "/t.jsonl");
    cputrain::value tokens = j.cell(0, j.column_index("tokens"));
    CHECK(tokens.type == CT_VALUE_LIST && tokens.items.size() == 2 &&
          tokens.items[1].text == "rejects");
    cputrain::table moved(std::move(j));
    CHECK(moved.rows() == 1);
    try {
        j.rows();
        CHECK(false);
    } catch (const cputrain::error &e) {
        CHECK(e.status() == CT_ERR_INVALID_ARG);
    }
    cputrain::hub_options o;
    o.cache_dir = dir + "/cache";
    o.local_files_only = 1;
    try {
        cputrain::table::load_dataset("squad", "", "train", o);
        CHECK(false);
    } catch (const cputrain::error &e) {
        CHECK(e.status() == CT_ERR_NOT_FOUND);
    }
}

int main() {
    test_errors();
    test_dist();
    test_typed_and_text_access();
    test_field_table_and_help();
    test_parse();
    test_json();
    test_copy_and_move();
    test_batch();
    test_model_basics();
    test_model_errors_and_move();
    test_model_save_load();
    test_optimizer();
    test_dataset();
    test_trainer();
    test_tokenizer();
    test_model_load_head();
    test_output_lock();
    test_workflow();
    test_rendezvous();
    test_trainer_state();
    test_metrics();
    test_hub();
    test_table();
    std::printf("test_wrapper: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

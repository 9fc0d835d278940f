// Tests of bindings/cpp/cputrain.hpp against the built library: errors as
// exceptions, typed and text access, parse, JSON, copy and move. No
// framework: each CHECK counts, the last line says "N passed, M failed".
#include "cputrain.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
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

int main() {
    test_errors();
    test_typed_and_text_access();
    test_field_table_and_help();
    test_parse();
    test_json();
    test_copy_and_move();
    std::printf("test_wrapper: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

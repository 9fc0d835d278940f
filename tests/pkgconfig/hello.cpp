// Built by tests/pkgconfig/run.sh with nothing but pkg-config's flags: the
// installed header must work from C++ (extern "C" linkage included).
#include <cputrain/cputrain.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define EXPECT(cond)                                                          \
    do {                                                                      \
        if (!(cond)) {                                                        \
            std::fprintf(stderr, "hello.cpp:%d: expected %s\n", __LINE__, #cond); \
            return 1;                                                         \
        }                                                                     \
    } while (0)

int main() {
    std::vector<const char *> argv = {"--seed", "7", "--lr_scheduler_type", "cosine"};
    ct_args *args = nullptr;
    std::int64_t seed = 0;
    const char *scheduler = nullptr;
    char text[32];
    std::size_t length = 0;

    EXPECT(ct_version_number() == CT_VERSION_NUMBER);
    EXPECT(std::string(ct_version_string()) == CT_VERSION_STRING);

    EXPECT(ct_args_create(&args) == CT_OK);
    EXPECT(ct_args_parse(args, static_cast<int>(argv.size()), argv.data()) == CT_OK);
    EXPECT(ct_args_get_int(args, "seed", &seed) == CT_OK && seed == 7);
    EXPECT(ct_args_get_string(args, "lr_scheduler_type", &scheduler) == CT_OK);
    EXPECT(std::strcmp(scheduler, "cosine") == 0);
    EXPECT(ct_args_get(args, "learning_rate", text, sizeof text, &length) == CT_OK);
    EXPECT(std::string(text) == "5e-05" && length == 5);
    EXPECT(ct_args_set_bool(args, "seed", 1) == CT_ERR_INVALID_ARG);
    EXPECT(std::strstr(ct_last_error(), "seed") != nullptr);
    ct_args_free(args);

    std::printf("hello (C++): libcputrain %s ok\n", ct_version_string());
    return 0;
}

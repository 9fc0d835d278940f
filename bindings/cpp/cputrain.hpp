// Header-only C++11 wrapper over libcputrain's C API: exceptions instead of
// status codes, RAII handles, std::string and std::vector at the edges.
// Everything here is inline and calls only the public C functions, so it
// adds no symbols to the library's ABI.
#ifndef CPUTRAIN_HPP
#define CPUTRAIN_HPP

#include <cputrain/cputrain.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cputrain {

// A failed libcputrain call: what() is "CT_ERR_X: <ct_last_error() text>".
class error : public std::runtime_error {
public:
    error(ct_status status, const std::string &message)
        : std::runtime_error(std::string(ct_status_name(status)) + ": " + message),
          status_(status), message_(message) {}

    ct_status status() const noexcept { return status_; }
    const char *status_name() const noexcept { return ct_status_name(status_); }
    // The library's text alone, without the status name.
    const std::string &message() const noexcept { return message_; }

private:
    ct_status status_;
    std::string message_;
};

// Throw cputrain::error unless `status` is CT_OK. Call it directly on the
// result of a C call: ct_last_error() belongs to this thread and is replaced
// by the next failing call.
inline void check(ct_status status) {
    if (status != CT_OK)
        throw error(status, ct_last_error());
}

inline std::string version() { return ct_version_string(); }

// One row of the training-argument table.
struct field_info {
    std::string name;
    ct_arg_type type;
    bool optional;
    std::string default_value;  // as command-line text; "None" when unset
    std::string help;
    std::string choices;        // "a|b|c" for CT_ARG_CHOICE, else ""
};

// Owns a ct_args handle. Copying copies the values (ct_args_copy); moving
// transfers the handle and leaves the source empty (get() == nullptr),
// where every call but destruction and assignment throws CT_ERR_INVALID_ARG.
class training_args {
public:
    training_args() { check(ct_args_create(&args_)); }

    // Take ownership of a handle made through the C API.
    explicit training_args(ct_args *adopt) noexcept : args_(adopt) {}

    training_args(const training_args &other) : args_(nullptr) {
        check(ct_args_copy(other.args_, &args_));
    }
    training_args(training_args &&other) noexcept : args_(other.args_) {
        other.args_ = nullptr;
    }
    training_args &operator=(training_args other) noexcept {
        // By value: copy-and-swap covers copy and move assignment alike, and
        // a failed copy leaves *this untouched.
        std::swap(args_, other.args_);
        return *this;
    }
    ~training_args() { ct_args_free(args_); }

    ct_args *get() const noexcept { return args_; }
    // Give up ownership (the caller then frees it with ct_args_free).
    ct_args *release() noexcept {
        ct_args *p = args_;
        args_ = nullptr;
        return p;
    }

    // ---- the field table (the same for every handle) ---------------------

    static std::vector<field_info> fields() {
        std::vector<field_info> out;
        std::size_t n = ct_args_field_count();
        out.reserve(n);
        for (std::size_t i = 0; i < n; i++) {
            field_info f;
            f.name = ct_args_field_name(i);
            f.type = static_cast<ct_arg_type>(ct_args_field_type(i));
            f.optional = ct_args_field_optional(i) == 1;
            f.default_value = ct_args_field_default(i);
            f.help = ct_args_field_help(i);
            f.choices = ct_args_field_choices(i);
            out.push_back(f);
        }
        return out;
    }

    // The --help table, as argparse prints it.
    static std::string help() { return ct_args_help(); }

    // ---- values as command-line text ("3e-5", "true", "None") -----------

    void set(const std::string &name, const std::string &text) {
        check(ct_args_set(args_, name.c_str(), text.c_str()));
    }

    std::string get(const std::string &name) const {
        std::size_t length = 0;
        check(ct_args_get(args_, name.c_str(), nullptr, 0, &length)); // length only
        std::vector<char> buf(length + 1);
        check(ct_args_get(args_, name.c_str(), buf.data(), buf.size(), nullptr));
        return std::string(buf.data(), length);
    }

    // ---- typed access ------------------------------------------------------
    // Named per type on purpose: overloads on bool/int64/double/string would
    // let set("lr_scheduler_type", "cosine") pick the bool overload.

    bool is_set(const std::string &name) const {
        int out = 0;
        check(ct_args_is_set(args_, name.c_str(), &out));
        return out != 0;
    }
    void unset(const std::string &name) { check(ct_args_unset(args_, name.c_str())); }

    void set_bool(const std::string &name, bool value) {
        check(ct_args_set_bool(args_, name.c_str(), value ? 1 : 0));
    }
    bool get_bool(const std::string &name) const {
        int out = 0;
        check(ct_args_get_bool(args_, name.c_str(), &out));
        return out != 0;
    }
    void set_int(const std::string &name, std::int64_t value) {
        check(ct_args_set_int(args_, name.c_str(), value));
    }
    std::int64_t get_int(const std::string &name) const {
        std::int64_t out = 0;
        check(ct_args_get_int(args_, name.c_str(), &out));
        return out;
    }
    void set_float(const std::string &name, double value) {
        check(ct_args_set_float(args_, name.c_str(), value));
    }
    double get_float(const std::string &name) const {
        double out = 0;
        check(ct_args_get_float(args_, name.c_str(), &out));
        return out;
    }
    // For CT_ARG_STRING and CT_ARG_CHOICE fields.
    void set_string(const std::string &name, const std::string &value) {
        check(ct_args_set_string(args_, name.c_str(), value.c_str()));
    }
    // Throws CT_ERR_STATE for an optional field that is None (see is_set).
    std::string get_string(const std::string &name) const {
        const char *out = nullptr;
        check(ct_args_get_string(args_, name.c_str(), &out));
        if (!out)
            throw error(CT_ERR_STATE, "field '" + name + "' is None");
        return out;
    }

    // ---- command line, JSON, validation ------------------------------------

    // Arguments only, no program name: from main, use {argv + 1, argv + argc}.
    // Validates; on failure nothing changes. Returns what was not consumed.
    std::vector<std::string> parse(const std::vector<std::string> &arguments) {
        std::vector<const char *> argv;
        argv.reserve(arguments.size());
        for (std::size_t i = 0; i < arguments.size(); i++)
            argv.push_back(arguments[i].c_str());
        check(ct_args_parse(args_, static_cast<int>(argv.size()), argv.data()));
        return unparsed();
    }

    std::vector<std::string> unparsed() const {
        std::vector<std::string> out;
        std::size_t n = ct_args_unparsed_count(args_);
        for (std::size_t i = 0; i < n; i++)
            out.push_back(ct_args_unparsed(args_, i));
        return out;
    }

    void validate() const { check(ct_args_validate(args_)); }

    void save_json(const std::string &path) const {
        check(ct_args_save_json(args_, path.c_str()));
    }
    // Applies the file on top of the current values; returns unknown keys
    // as "--key", "value" pairs.
    std::vector<std::string> load_json(const std::string &path) {
        check(ct_args_load_json(args_, path.c_str()));
        return unparsed();
    }

private:
    ct_args *args_ = nullptr;
};

} // namespace cputrain

#endif // CPUTRAIN_HPP

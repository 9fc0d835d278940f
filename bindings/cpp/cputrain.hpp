// Header-only C++11 wrapper over libcputrain's C API: exceptions instead of
// status codes, RAII handles (training_args, model, batch), std::string and
// std::vector at the edges.
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

// ---- models -------------------------------------------------------------------

// Owns a ct_batch: token ids [batch_size, seq_len] and the head's labels,
// copied by the library. Move-only; a moved-from batch is empty (get() ==
// nullptr) and every call but destruction and assignment throws
// CT_ERR_INVALID_ARG.
class batch {
public:
    batch() { check(ct_batch_create(&batch_)); }
    // Inputs at once; empty token_type_ids means all 0, empty attention_mask all 1.
    batch(int batch_size, int seq_len, const std::vector<std::int32_t> &input_ids,
          const std::vector<std::int32_t> &token_type_ids = std::vector<std::int32_t>(),
          const std::vector<std::int32_t> &attention_mask = std::vector<std::int32_t>())
        : batch() {
        set_inputs(batch_size, seq_len, input_ids, token_type_ids, attention_mask);
    }
    explicit batch(ct_batch *adopt) noexcept : batch_(adopt) {}

    batch(const batch &) = delete;
    batch &operator=(const batch &) = delete;
    batch(batch &&other) noexcept : batch_(other.batch_) { other.batch_ = nullptr; }
    batch &operator=(batch &&other) noexcept {
        std::swap(batch_, other.batch_);
        return *this;
    }
    ~batch() { ct_batch_free(batch_); }

    ct_batch *get() const noexcept { return batch_; }
    ct_batch *release() noexcept {
        ct_batch *p = batch_;
        batch_ = nullptr;
        return p;
    }

    // Replaces the inputs and clears the labels. Vector sizes are checked
    // here, since the C call reads batch_size x seq_len values blindly.
    void set_inputs(int batch_size, int seq_len, const std::vector<std::int32_t> &input_ids,
                    const std::vector<std::int32_t> &token_type_ids = std::vector<std::int32_t>(),
                    const std::vector<std::int32_t> &attention_mask = std::vector<std::int32_t>()) {
        std::size_t n = batch_size > 0 && seq_len > 0
                            ? static_cast<std::size_t>(batch_size) * static_cast<std::size_t>(seq_len)
                            : 0;
        expect_size("input_ids", input_ids.size(), n, false);
        expect_size("token_type_ids", token_type_ids.size(), n, true);
        expect_size("attention_mask", attention_mask.size(), n, true);
        check(ct_batch_set_inputs(live(), batch_size, seq_len, input_ids.data(),
                                  token_type_ids.empty() ? nullptr : token_type_ids.data(),
                                  attention_mask.empty() ? nullptr : attention_mask.data()));
    }
    // Question answering: [batch_size] each; clamped to [0, seq_len], where
    // seq_len means "ignored".
    void set_positions(const std::vector<std::int32_t> &start_positions,
                       const std::vector<std::int32_t> &end_positions) {
        std::size_t n = static_cast<std::size_t>(size());
        expect_size("start_positions", start_positions.size(), n, false);
        expect_size("end_positions", end_positions.size(), n, false);
        check(ct_batch_set_positions(live(), start_positions.data(), end_positions.data()));
    }
    // Class ids [batch_size], or masked-LM token ids [batch_size * seq_len]
    // with -100 for positions not predicted.
    void set_labels(const std::vector<std::int32_t> &labels) {
        check(ct_batch_set_labels(live(), labels.data(), labels.size()));
    }
    // Regression targets [batch_size] (num_labels 1).
    void set_float_labels(const std::vector<float> &labels) {
        check(ct_batch_set_float_labels(live(), labels.data(), labels.size()));
    }

    int size() const { return ct_batch_size(live()); }
    int seq_len() const { return ct_batch_seq_len(live()); }

private:
    ct_batch *live() const {
        if (!batch_)
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::batch (moved from)");
        return batch_;
    }
    static void expect_size(const char *what, std::size_t got, std::size_t want, bool may_be_empty) {
        if (got == want || (may_be_empty && got == 0))
            return;
        throw error(CT_ERR_INVALID_ARG, std::string(what) + " has " + std::to_string(got) +
                                            " values; the batch needs " + std::to_string(want));
    }

    ct_batch *batch_ = nullptr;
};

// One named parameter tensor of a model.
struct tensor_info {
    std::string name;                 // Transformers' state-dict name
    std::vector<std::int64_t> shape;  // [out, in] for Linear weights
    std::size_t numel;
    bool decays;                      // AdamW weight decay applies
};

// The logits of the last forward pass: a view into the model, valid until
// its next pass. QA [B, T, 2], classification [B, num_labels], MLM [B, T, V].
struct logits_view {
    const float *data;
    std::vector<std::int64_t> shape;
    std::size_t size() const {
        std::size_t n = 1;
        for (std::size_t i = 0; i < shape.size(); i++)
            n *= static_cast<std::size_t>(shape[i]);
        return n;
    }
    float operator[](std::size_t i) const { return data[i]; }
};

// Owns a ct_model: BERT or DistilBERT with a task head. Move-only (a model
// is large; save() and load() copy it). A moved-from model is empty and
// every call but destruction and assignment throws CT_ERR_INVALID_ARG.
class model {
public:
    // A new model with Hugging Face's initialisation. `config`: a built-in
    // name ("bert-base-uncased", "bert-test", ...) or a config.json path.
    static model create(const std::string &config,
                        ct_task task = CT_TASK_QUESTION_ANSWERING, std::uint64_t seed = 42) {
        ct_model *m = nullptr;
        check(ct_model_create(config.c_str(), task, seed, &m));
        return model(m);
    }
    // A Hugging Face folder; tensors it lacks come from `seed` (new_tensors()).
    static model load(const std::string &dir, ct_task task = CT_TASK_QUESTION_ANSWERING,
                      std::uint64_t seed = 42) {
        ct_model *m = nullptr;
        check(ct_model_load(dir.c_str(), task, seed, &m));
        return model(m);
    }

    explicit model(ct_model *adopt) noexcept : model_(adopt) {}
    model(const model &) = delete;
    model &operator=(const model &) = delete;
    model(model &&other) noexcept : model_(other.model_) { other.model_ = nullptr; }
    model &operator=(model &&other) noexcept {
        std::swap(model_, other.model_);
        return *this;
    }
    ~model() { ct_model_free(model_); }

    ct_model *get() const noexcept { return model_; }
    ct_model *release() noexcept {
        ct_model *p = model_;
        model_ = nullptr;
        return p;
    }

    // config.json and model.safetensors into the existing folder `dir`.
    void save(const std::string &dir, ct_dtype dtype = CT_DTYPE_F32) const {
        check(ct_model_save(live(), dir.c_str(), dtype));
    }
    std::vector<std::string> new_tensors() const {
        std::vector<std::string> out;
        std::size_t n = ct_model_new_tensor_count(live());
        for (std::size_t i = 0; i < n; i++)
            out.push_back(ct_model_new_tensor_name(model_, i));
        return out;
    }

    // ---- settings ------------------------------------------------------------

    void set_precision(ct_precision precision) { check(ct_model_set_precision(live(), precision)); }
    ct_precision precision() const { return ct_model_get_precision(live()); }
    void set_training(bool training) { check(ct_model_set_training(live(), training ? 1 : 0)); }
    void set_seed(std::uint64_t seed, std::uint64_t step = 0) {
        check(ct_model_set_seed(live(), seed, step));
    }
    void set_threads(int threads) { check(ct_model_set_threads(live(), threads)); }
    int threads() const { return ct_model_get_threads(live()); }
    ct_task task() const { return ct_model_get_task(live()); }
    std::string architecture() const { return ct_model_architecture(live()); }
    std::int64_t config_int(const std::string &key) const {
        std::int64_t out = 0;
        check(ct_model_config_int(live(), key.c_str(), &out));
        return out;
    }

    // ---- computing -----------------------------------------------------------

    // Forward and backward; returns the loss. The gradient of loss *
    // loss_scale is added to the gradients (zero_grad() clears them).
    float forward_backward(const batch &b, float loss_scale = 1.0f) {
        float loss = 0;
        check(ct_model_forward_backward(live(), batch_of(b), loss_scale, &loss));
        return loss;
    }
    // Forward only, with the loss (the batch needs the head's labels).
    float forward(const batch &b) {
        float loss = 0;
        check(ct_model_forward(live(), batch_of(b), &loss));
        return loss;
    }
    // Forward only, no loss and no labels needed (inference); read logits().
    void predict(const batch &b) { check(ct_model_forward(live(), batch_of(b), nullptr)); }

    logits_view logits() const {
        logits_view v;
        int ndim = 0;
        std::int64_t shape[3] = {0, 0, 0};
        v.data = nullptr;
        check(ct_model_logits(live(), &v.data, &ndim, shape));
        v.shape.assign(shape, shape + ndim);
        return v;
    }
    void zero_grad() { check(ct_model_zero_grad(live())); }
    // After writing parameters through data(): refreshes the bf16 copy.
    void params_changed() { check(ct_model_params_changed(live())); }

    // ---- parameters ----------------------------------------------------------

    std::size_t num_parameters() const { return ct_model_num_parameters(live()); }
    std::size_t tensor_count() const { return ct_model_tensor_count(live()); }
    // Throws CT_ERR_NOT_FOUND naming an unknown tensor.
    std::size_t tensor_index(const std::string &name) const {
        std::size_t index = 0;
        check(ct_model_tensor_index(live(), name.c_str(), &index));
        return index;
    }
    tensor_info tensor(std::size_t index) const {
        in_range(index);
        tensor_info t;
        t.name = ct_model_tensor_name(model_, index);
        int ndim = ct_model_tensor_ndim(model_, index);
        for (int axis = 0; axis < ndim; axis++)
            t.shape.push_back(ct_model_tensor_dim(model_, index, axis));
        t.numel = ct_model_tensor_numel(model_, index);
        t.decays = ct_model_tensor_decays(model_, index) != 0;
        return t;
    }
    tensor_info tensor(const std::string &name) const { return tensor(tensor_index(name)); }
    std::vector<std::string> tensor_names() const {
        std::vector<std::string> out;
        std::size_t n = tensor_count();
        for (std::size_t i = 0; i < n; i++)
            out.push_back(ct_model_tensor_name(model_, i));
        return out;
    }
    // fp32 values and gradients inside the model's flat buffers (numel() floats).
    float *data(std::size_t index) {
        in_range(index);
        return ct_model_tensor_data(model_, index);
    }
    float *grad(std::size_t index) {
        in_range(index);
        return ct_model_tensor_grad(model_, index);
    }
    float *data(const std::string &name) { return data(tensor_index(name)); }
    float *grad(const std::string &name) { return grad(tensor_index(name)); }

private:
    ct_model *live() const {
        if (!model_)
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::model (moved from)");
        return model_;
    }
    void in_range(std::size_t index) const {
        if (index >= ct_model_tensor_count(live()))
            throw error(CT_ERR_INVALID_ARG, "tensor index " + std::to_string(index) +
                                                " is out of range (" +
                                                std::to_string(ct_model_tensor_count(model_)) +
                                                " tensors)");
    }
    static const ct_batch *batch_of(const batch &b) {
        if (!b.get())
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::batch (moved from)");
        return b.get();
    }

    ct_model *model_ = nullptr;
};

} // namespace cputrain

#endif // CPUTRAIN_HPP

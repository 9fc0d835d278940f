// Header-only C++11 wrapper over libcputrain's C API: exceptions instead of
// status codes, RAII handles (training_args, model, batch, optimizer,
// dataset, tokenizer, trainer), std::string, std::vector and std::function at
// the edges.
// Everything here is inline and calls only the public C functions, so it
// adds no symbols to the library's ABI.
#ifndef CPUTRAIN_HPP
#define CPUTRAIN_HPP

#include <cputrain/cputrain.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
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
// The kernel level in use: "generic", "avx512", "avx512bf16" or "amx".
inline std::string kernel_isa() { return ct_kernel_isa(); }

// One row of the training-argument table.
struct field_info {
    std::string name;
    ct_arg_type type;
    bool optional;
    std::string default_value;  // as command-line text; "None" when unset
    std::string help;
    std::string choices;        // "a|b|c" for CT_ARG_CHOICE, else ""
};

// One row of the table of every Transformers 4.x / run_qa.py argument and
// its fate here (ct_args_known_*).
struct known_argument {
    std::string name;
    std::string group;          // "TrainingArguments", "ModelArguments", ...
    ct_arg_fate fate;           // implemented, no effect (warns), refused (throws)
    ct_arg_type type;
    std::string default_value;  // as command-line text; "a|b" lists spellings
    std::string reason;         // why, and what to do instead; "" if implemented
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

    // Every argument a Transformers user may pass, fields first, with its fate.
    static std::vector<known_argument> known_arguments() {
        std::vector<known_argument> out;
        std::size_t n = ct_args_known_count();
        out.reserve(n);
        for (std::size_t i = 0; i < n; i++) {
            known_argument k;
            k.name = ct_args_known_name(i);
            k.group = ct_args_known_group(i);
            k.fate = static_cast<ct_arg_fate>(ct_args_known_fate(i));
            k.type = static_cast<ct_arg_type>(ct_args_known_type(i));
            k.default_value = ct_args_known_default(i);
            k.reason = ct_args_known_reason(i);
            out.push_back(k);
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
    // own_names: the caller's argument names (no "--"): an unambiguous prefix
    // of any name counts as that name (argparse's allow_abbrev; one of these
    // comes back in full), an ambiguous one throws naming the candidates.
    std::vector<std::string> parse(const std::vector<std::string> &arguments,
                                   const std::vector<std::string> &own_names = {}) {
        std::vector<const char *> argv = c_strings(arguments), own = c_strings(own_names);
        check(ct_args_parse_with_names(args_, static_cast<int>(argv.size()), argv.data(),
                                       own.data(), own.size()));
        return unparsed();
    }
    // The argument name nearest to `name`, for "did you mean --...?"; empty
    // when none is close.
    static std::string closest_name(const std::string &name,
                                    const std::vector<std::string> &own_names = {}) {
        std::vector<const char *> own = c_strings(own_names);
        const char *found = ct_args_closest_name(name.c_str(), own.data(), own.size());
        return found ? found : "";
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
    static std::vector<const char *> c_strings(const std::vector<std::string> &v) {
        std::vector<const char *> out;
        out.reserve(v.size());
        for (const auto &x : v)
            out.push_back(x.c_str());
        return out;
    }
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
    void set_example_ids(const std::vector<std::uint64_t> &ids) {
        check(ct_batch_set_example_ids(live(), ids.data(), ids.size()));
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
// Which cores a local rank's threads run on and which NUMA node its memory
// comes from (see placement.h); model::set_placement applies it.
class placement {
public:
    // topology: "" for this machine, else an hwloc synthetic description or
    // an lstopo XML file. threads 0: OMP_NUM_THREADS, else one per core.
    placement(int local_rank, int local_world_size, int threads = 0,
              const std::string &topology = std::string()) {
        check(ct_placement_create(topology.empty() ? nullptr : topology.c_str(), local_rank,
                                  local_world_size, threads, &placement_));
    }
    placement(const placement &) = delete;
    placement &operator=(const placement &) = delete;
    placement(placement &&other) noexcept : placement_(other.placement_) {
        other.placement_ = nullptr;
    }
    placement &operator=(placement &&other) noexcept {
        std::swap(placement_, other.placement_);
        return *this;
    }
    ~placement() { ct_placement_free(placement_); }

    ct_placement *get() const noexcept { return placement_; }
    int threads() const { return ct_placement_threads(live()); }
    int numa_node() const { return ct_placement_numa_node(live()); }
    std::string describe() { return ct_placement_describe(live()); }

private:
    ct_placement *live() const {
        if (!placement_)
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::placement (moved from)");
        return placement_;
    }
    ct_placement *placement_ = nullptr;
};

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
    // The head a folder's config.json (or that file) names in
    // "architectures": BertForQuestionAnswering -> CT_TASK_QUESTION_ANSWERING,
    // ...; throws CT_ERR_NOT_FOUND when it names none, CT_ERR_UNSUPPORTED
    // for an architecture without one of the library's heads.
    static ct_task config_task(const std::string &path) {
        ct_task task = CT_TASK_QUESTION_ANSWERING;
        check(ct_model_config_task(path.c_str(), &task));
        return task;
    }
    // A Hugging Face folder with the head its config.json names (as
    // from_pretrained does; see config_task). Name the head with the
    // overload below to load another one, or a folder naming none.
    static model load(const std::string &dir) { return load(dir, config_task(dir)); }
    // A Hugging Face folder with the head `task`; tensors it lacks come from
    // `seed` (new_tensors()).
    static model load(const std::string &dir, ct_task task, std::uint64_t seed = 42) {
        ct_model *m = nullptr;
        check(ct_model_load(dir.c_str(), task, seed, &m));
        return model(m);
    }
    // from_pretrained's keyword arguments (ct_model_options): a
    // classification head's labels override config.json's — names in id
    // order (empty: LABEL_<id>, or the configuration's when num_labels is 0
    // too), problem_type (empty: the configuration's) — and
    // ignore_mismatched_sizes initialises a checkpoint tensor of another
    // shape instead of failing the load.
    struct options {
        int num_labels = 0;
        std::vector<std::string> names;
        std::string problem_type;
        bool ignore_mismatched_sizes = false;
    };
    static model create(const std::string &config, ct_task task, std::uint64_t seed,
                        const options &o) {
        ct_model *m = nullptr;
        c_options c(o);
        check(ct_model_create_with_options(config.c_str(), task, seed, c.get(), &m));
        return model(m);
    }
    static model load(const std::string &dir, ct_task task, std::uint64_t seed,
                      const options &o) {
        ct_model *m = nullptr;
        c_options c(o);
        check(ct_model_load_with_options(dir.c_str(), task, seed, c.get(), &m));
        return model(m);
    }
    // id2label[id] (LABEL_<id> where the configuration names none).
    std::string label_name(int id) const {
        const char *name = ct_model_label_name(live(), id);
        if (!name)
            throw error(CT_ERR_INVALID_ARG,
                        "label id " + std::to_string(id) + " is outside [0, num_labels)");
        return name;
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
    bool gradient_checkpointing() const { return ct_model_get_gradient_checkpointing(live()) != 0; }
    void set_gradient_checkpointing(bool on)
    {
        check(ct_model_set_gradient_checkpointing(live(), on ? 1 : 0));
    }
    void set_seed(std::uint64_t seed, std::uint64_t step = 0) {
        check(ct_model_set_seed(live(), seed, step));
    }
    void set_threads(int threads) { check(ct_model_set_threads(live(), threads)); }
    // Threads pinned and buffers moved as `p` plans (this machine only).
    void set_placement(placement &p) { check(ct_model_set_placement(live(), p.get())); }
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
    // After writing parameters through data(): the bf16 form of the weights
    // is rebuilt from them by the next forward.
    void params_changed() { check(ct_model_params_changed(live())); }

    // ---- parameters ----------------------------------------------------------

    std::size_t num_parameters() const { return ct_model_num_parameters(live()); }
    // Bytes held now in one memory category ("parameters", "gradients",
    // "packed_weights", "activations", "kernel_scratch");
    // throws CT_ERR_NOT_FOUND naming an unknown one.
    std::size_t memory_bytes(const std::string &category) const {
        std::size_t out = 0;
        check(ct_model_memory_bytes(live(), category.c_str(), &out));
        return out;
    }
    // Those categories, in the library's order.
    static std::vector<std::string> memory_categories() {
        std::vector<std::string> names;
        for (std::size_t i = 0; ct_model_memory_category(i); i++)
            names.emplace_back(ct_model_memory_category(i));
        return names;
    }
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
    // The C handle of `options`, freed with it.
    class c_options {
      public:
        explicit c_options(const options &o) {
            check(ct_model_options_create(&handle_));
            try {
                std::vector<const char *> names;
                for (const auto &n : o.names)
                    names.push_back(n.c_str());
                if (!names.empty())
                    check(ct_model_options_set_labels(handle_, names.data(),
                                                      static_cast<int>(names.size())));
                if (o.num_labels)
                    check(ct_model_options_set(handle_, "num_labels",
                                               std::to_string(o.num_labels).c_str()));
                if (!o.problem_type.empty())
                    check(ct_model_options_set(handle_, "problem_type", o.problem_type.c_str()));
                if (o.ignore_mismatched_sizes)
                    check(ct_model_options_set(handle_, "ignore_mismatched_sizes", "true"));
            } catch (...) {
                ct_model_options_free(handle_);
                throw;
            }
        }
        ~c_options() { ct_model_options_free(handle_); }
        c_options(const c_options &) = delete;
        c_options &operator=(const c_options &) = delete;
        const ct_model_options *get() const { return handle_; }

      private:
        ct_model_options *handle_ = nullptr;
    };
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

// ---- the optimizer -------------------------------------------------------------

// optimizer::step() found a non-finite gradient norm: nothing was applied,
// the gradients were zeroed and the step was not counted. grad_norm() is
// the norm (inf or nan).
class numeric_error : public error {
public:
    numeric_error(const std::string &message, double grad_norm)
        : error(CT_ERR_NUMERIC, message), grad_norm_(grad_norm) {}
    double grad_norm() const noexcept { return grad_norm_; }

private:
    double grad_norm_;
};

// A ct_optim: AdamW as torch.optim.AdamW, clipping to max_grad_norm and
// Transformers' learning-rate schedule, configured from training_args. The
// model must outlive it. Move-only; a moved-from optimizer is empty and
// every call but destruction and assignment throws CT_ERR_INVALID_ARG.
// trainer::optimizer() hands out a borrowed one (owns() is false), valid
// until the trainer's next train() or its destruction.
class optimizer {
public:
    optimizer(model &m, const training_args &args) {
        if (!m.get())
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::model (moved from)");
        check(ct_optim_create(m.get(), args.get(), &optim_));
    }
    explicit optimizer(ct_optim *adopt, bool owns = true) noexcept : optim_(adopt), owns_(owns) {}
    optimizer(const optimizer &) = delete;
    optimizer &operator=(const optimizer &) = delete;
    optimizer(optimizer &&other) noexcept : optim_(other.optim_), owns_(other.owns_) {
        other.optim_ = nullptr;
    }
    optimizer &operator=(optimizer &&other) noexcept {
        std::swap(optim_, other.optim_);
        std::swap(owns_, other.owns_);
        return *this;
    }
    ~optimizer() {
        if (owns_)
            ct_optim_free(optim_);
    }

    ct_optim *get() const noexcept { return optim_; }
    bool owns() const noexcept { return owns_; }

    // num_training_steps of the schedule; step() needs it first.
    void set_total_steps(std::int64_t total_steps) {
        check(ct_optim_set_total_steps(live(), total_steps));
    }
    // Whether weight decay applies to one tensor (by model tensor index).
    void set_decay(std::size_t tensor_index, bool decays) {
        check(ct_optim_set_decay(live(), tensor_index, decays ? 1 : 0));
    }
    // Clip, AdamW, advance the schedule, zero the gradients; returns the
    // gradient norm before clipping. Throws numeric_error for a non-finite one.
    double step() {
        double norm = 0;
        ct_status st = ct_optim_step(live(), &norm);
        if (st == CT_ERR_NUMERIC)
            throw numeric_error(ct_last_error(), norm);
        check(st);
        return norm;
    }
    double grad_norm() const {
        double norm = 0;
        check(ct_optim_grad_norm(live(), &norm));
        return norm;
    }
    std::int64_t step_count() const { return ct_optim_get_step(live()); }
    // The rate the next step will use, and the schedule at any step.
    double lr() const { return ct_optim_get_lr(live()); }
    double lr_at(std::int64_t step) const { return ct_optim_lr_at(live(), step); }
    // Bytes of the optimizer's state: "optimizer_moments" (AdamW's moments).
    std::size_t memory_bytes(const std::string &category = "optimizer_moments") const {
        std::size_t out = 0;
        check(ct_optim_memory_bytes(live(), category.c_str(), &out));
        return out;
    }
    void save(const std::string &path) const { check(ct_optim_save(live(), path.c_str())); }
    void load(const std::string &path) { check(ct_optim_load(live(), path.c_str())); }

private:
    ct_optim *live() const {
        if (!optim_)
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::optimizer");
        return optim_;
    }

    ct_optim *optim_ = nullptr;
    bool owns_ = true;
};

// ---- datasets -------------------------------------------------------------------

// Marks the calls kept for old code, with what replaces them.
#if defined(__GNUC__) || defined(__clang__)
#define CPUTRAIN_DEPRECATED(why) __attribute__((deprecated(why)))
#else
#define CPUTRAIN_DEPRECATED(why)
#endif

// One example, its fields in ct_dataset_add's order: input_ids (seq_len),
// token_type_ids and attention_mask (empty: all 0 / all 1), labels.
struct example {
    std::vector<std::int32_t> input_ids, token_type_ids, attention_mask, labels;
};
// The same with real-valued labels (ct_dataset_add_float's order).
struct float_example {
    std::vector<std::int32_t> input_ids, token_type_ids, attention_mask;
    std::vector<float> labels;
};

// A ct_dataset: tokenised examples of one task, each seq_len tokens long,
// copied by the library. Move-only; a moved-from dataset is empty.
class dataset {
public:
    dataset(ct_task task, int seq_len) : task_(task) {
        check(ct_dataset_create(task, seq_len, &dataset_));
    }
    dataset(const dataset &) = delete;
    dataset &operator=(const dataset &) = delete;
    dataset(dataset &&other) noexcept : dataset_(other.dataset_), task_(other.task_) {
        other.dataset_ = nullptr;
    }
    dataset &operator=(dataset &&other) noexcept {
        std::swap(dataset_, other.dataset_);
        std::swap(task_, other.task_);
        return *this;
    }
    ~dataset() { ct_dataset_free(dataset_); }

    ct_dataset *get() const noexcept { return dataset_; }
    ct_task task() const noexcept { return task_; }
    std::size_t size() const { return ct_dataset_size(live()); }
    int seq_len() const { return ct_dataset_seq_len(live()); }
    // Labels per example: 2 (start, end), 1 (class id), seq_len (masked LM,
    // token classification), or as many real labels as the first example had.
    std::size_t labels_per_example() const { return ct_dataset_labels_per_example(live()); }
    bool has_float_labels() const { return ct_dataset_has_float_labels(live()) != 0; }

    // One example, d.add({ids, types, mask, labels}) in ct_dataset_add's
    // order ({ids, {}, {}, labels}: types all 0, mask all 1). Sizes are
    // checked here, since the C call reads seq_len values blindly.
    void add(const example &e) {
        expect_inputs(e.input_ids, e.token_type_ids, e.attention_mask);
        expect_size("labels", e.labels.size(), labels_per_example(), false);
        check(ct_dataset_add(live(), e.input_ids.data(), optional(e.token_type_ids),
                             optional(e.attention_mask), e.labels.data(), e.labels.size()));
    }
    // One example with real labels (sequence classification): a regression
    // target, or num_labels multi-label values; the first example sets how
    // many, and a dataset holds one kind of label.
    void add_float(const float_example &e) {
        expect_inputs(e.input_ids, e.token_type_ids, e.attention_mask);
        if (size() > 0)
            expect_size("labels", e.labels.size(), labels_per_example(), false);
        check(ct_dataset_add_float(live(), e.input_ids.data(), optional(e.token_type_ids),
                                   optional(e.attention_mask), e.labels.data(), e.labels.size()));
    }
    // The first form, labels second: kept for code written against 0.1.0.
    CPUTRAIN_DEPRECATED("use add({input_ids, token_type_ids, attention_mask, labels}), "
                        "ct_dataset_add's order")
    void add(const std::vector<std::int32_t> &input_ids, const std::vector<std::int32_t> &labels,
             const std::vector<std::int32_t> &token_type_ids = std::vector<std::int32_t>(),
             const std::vector<std::int32_t> &attention_mask = std::vector<std::int32_t>()) {
        add(example{input_ids, token_type_ids, attention_mask, labels});
    }
    CPUTRAIN_DEPRECATED("use add_float({input_ids, token_type_ids, attention_mask, labels}), "
                        "ct_dataset_add_float's order")
    void add_float(const std::vector<std::int32_t> &input_ids, const std::vector<float> &labels,
                   const std::vector<std::int32_t> &token_type_ids = std::vector<std::int32_t>(),
                   const std::vector<std::int32_t> &attention_mask = std::vector<std::int32_t>()) {
        add_float(float_example{input_ids, token_type_ids, attention_mask, labels});
    }
    // Examples `indices` (inputs and labels) into b.
    void fill_batch(const std::vector<std::int64_t> &indices, batch &b) const {
        if (!b.get())
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::batch (moved from)");
        check(ct_dataset_fill_batch(live(), indices.data(), static_cast<int>(indices.size()),
                                    b.get()));
    }
    batch make_batch(const std::vector<std::int64_t> &indices) const {
        batch b;
        fill_batch(indices, b);
        return b;
    }
    // Labels of examples [first, first + count) as added, labels_per_example()
    // values each; count -1 means to the end.
    std::vector<std::int32_t> labels(std::size_t first = 0,
                                     std::size_t count = static_cast<std::size_t>(-1)) const {
        std::size_t n = size();
        if (count == static_cast<std::size_t>(-1))
            count = first <= n ? n - first : 0;
        std::vector<std::int32_t> out(count * ct_dataset_labels_per_example(live()));
        check(ct_dataset_get_labels(live(), first, count, out.empty() ? nullptr : out.data()));
        return out;
    }
    // The same for real labels.
    std::vector<float> float_labels(std::size_t first = 0,
                                    std::size_t count = static_cast<std::size_t>(-1)) const {
        std::size_t n = size();
        if (count == static_cast<std::size_t>(-1))
            count = first <= n ? n - first : 0;
        std::vector<float> out(count * ct_dataset_labels_per_example(live()));
        check(ct_dataset_get_float_labels(live(), first, count,
                                          out.empty() ? nullptr : out.data()));
        return out;
    }

private:
    ct_dataset *live() const {
        if (!dataset_)
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::dataset (moved from)");
        return dataset_;
    }
    static void expect_size(const char *what, std::size_t got, std::size_t want, bool may_be_empty) {
        if (got == want || (may_be_empty && got == 0))
            return;
        throw error(CT_ERR_INVALID_ARG, std::string(what) + " has " + std::to_string(got) +
                                            " values; an example needs " + std::to_string(want));
    }
    void expect_inputs(const std::vector<std::int32_t> &input_ids,
                       const std::vector<std::int32_t> &token_type_ids,
                       const std::vector<std::int32_t> &attention_mask) const {
        std::size_t t = static_cast<std::size_t>(seq_len());
        expect_size("input_ids", input_ids.size(), t, false);
        expect_size("token_type_ids", token_type_ids.size(), t, true);
        expect_size("attention_mask", attention_mask.size(), t, true);
    }
    static const std::int32_t *optional(const std::vector<std::int32_t> &v) {
        return v.empty() ? nullptr : v.data();
    }

    ct_dataset *dataset_ = nullptr;
    ct_task task_;
};

// ---- the tokenizer ----------------------------------------------------------------

// One window of an encoding, with Transformers' names: per token, ids,
// type ids, attention mask (0 for padding), special-tokens mask, the text
// it comes from (sequence_ids: 0, 1, or -1 for added tokens and padding),
// its word (-1 likewise), and its span as [start, end) in code points
// (offsets, as Transformers' offset_mapping) and in UTF-8 bytes.
struct encoding {
    std::vector<std::int32_t> input_ids, token_type_ids, attention_mask, special_tokens_mask,
        sequence_ids, word_ids;
    std::vector<std::pair<std::int32_t, std::int32_t> > offsets, byte_offsets;
    std::size_t size() const noexcept { return input_ids.size(); }
};

// Owns a ct_tokenizer: BERT WordPiece as BertTokenizerFast. Encoding is
// thread-safe; changing an option while another thread encodes is not.
// Move-only; a moved-from tokenizer is empty and every call but destruction
// and assignment throws CT_ERR_INVALID_ARG.
class tokenizer {
public:
    // A vocab.txt, or a folder with one (and tokenizer_config.json,
    // special_tokens_map.json, tokenizer.json where present).
    explicit tokenizer(const std::string &path) { check(ct_tokenizer_load(path.c_str(), &tok_)); }
    explicit tokenizer(ct_tokenizer *adopt) noexcept : tok_(adopt) {}
    tokenizer(const tokenizer &) = delete;
    tokenizer &operator=(const tokenizer &) = delete;
    tokenizer(tokenizer &&other) noexcept : tok_(other.tok_) { other.tok_ = nullptr; }
    tokenizer &operator=(tokenizer &&other) noexcept {
        std::swap(tok_, other.tok_);
        return *this;
    }
    ~tokenizer() { ct_tokenizer_free(tok_); }

    ct_tokenizer *get() const noexcept { return tok_; }
    ct_tokenizer *release() noexcept {
        ct_tokenizer *p = tok_;
        tok_ = nullptr;
        return p;
    }

    // vocab.txt, tokenizer_config.json, special_tokens_map.json and
    // tokenizer.json into the existing folder `dir`, as save_pretrained
    // writes them; all four or none are replaced.
    void save(const std::string &dir) const { check(ct_tokenizer_save(live(), dir.c_str())); }

    // ---- settings ------------------------------------------------------------
    void set_option(ct_tokenizer_option option, std::int64_t value) {
        check(ct_tokenizer_set_option(live(), option, value));
    }
    std::int64_t option(ct_tokenizer_option option) const {
        std::int64_t value = 0;
        check(ct_tokenizer_get_option(live(), option, &value));
        return value;
    }

    // ---- vocabulary ----------------------------------------------------------
    std::size_t vocab_size() const { return ct_tokenizer_vocab_size(live()); }
    // Throws CT_ERR_NOT_FOUND for an id out of range.
    std::string id_to_token(std::int32_t id) const {
        const char *t = ct_tokenizer_id_to_token(live(), id);
        if (!t)
            throw error(CT_ERR_NOT_FOUND, "token id " + std::to_string(id) +
                                              " is outside the vocabulary of " +
                                              std::to_string(vocab_size()));
        return t;
    }
    // -1 when the vocabulary lacks it.
    std::int32_t token_to_id(const std::string &token) const {
        if (token.find('\0') != std::string::npos)
            return -1;
        return ct_tokenizer_token_to_id(live(), token.c_str());
    }
    // "" and -1 for CT_SPECIAL_MASK when the vocabulary has none.
    std::string special_token(ct_special_token which) const {
        const char *t = ct_tokenizer_special_token(live(), which);
        return t ? t : "";
    }
    std::int32_t special_id(ct_special_token which) const {
        return ct_tokenizer_special_id(live(), which);
    }

    // ---- encoding ------------------------------------------------------------
    // One text; one window, or several when max_length > 0 truncates it
    // (overlapping by `stride`; see ct_tokenizer_encode).
    std::vector<encoding> encode(const std::string &text, bool add_special_tokens = true,
                                 std::size_t max_length = 0, std::size_t stride = 0,
                                 bool pad_to_max_length = false) const {
        ct_encoding *enc = nullptr;
        check(ct_tokenizer_encode(live(), text.data(), text.size(), add_special_tokens ? 1 : 0,
                                  max_length, stride, pad_to_max_length ? 1 : 0, &enc));
        return windows(enc);
    }
    // [CLS] first [SEP] second [SEP]; by default as run_qa.py prepares
    // SQuAD features (only_second, 384, stride 128, padded).
    std::vector<encoding> encode_pair(const std::string &first, const std::string &second,
                                      ct_truncation truncation = CT_TRUNCATION_ONLY_SECOND,
                                      std::size_t max_length = 384, std::size_t stride = 128,
                                      bool pad_to_max_length = true) const {
        ct_encoding *enc = nullptr;
        check(ct_tokenizer_encode_pair(live(), first.data(), first.size(), second.data(),
                                       second.size(), truncation, max_length, stride,
                                       pad_to_max_length ? 1 : 0, &enc));
        return windows(enc);
    }

private:
    ct_tokenizer *live() const {
        if (!tok_)
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::tokenizer (moved from)");
        return tok_;
    }
    // Copies every window out, then frees the encoding.
    static std::vector<encoding> windows(ct_encoding *enc) {
        std::unique_ptr<ct_encoding, void (*)(ct_encoding *)> owner(enc, ct_encoding_free);
        std::vector<encoding> out(ct_encoding_num_windows(enc));
        for (std::size_t w = 0; w < out.size(); w++) {
            std::size_t n = ct_encoding_length(enc, w);
            encoding &e = out[w];
            if (n == 0)
                continue;
            e.input_ids.assign(ct_encoding_ids(enc, w), ct_encoding_ids(enc, w) + n);
            e.token_type_ids.assign(ct_encoding_type_ids(enc, w), ct_encoding_type_ids(enc, w) + n);
            e.attention_mask.assign(ct_encoding_attention_mask(enc, w),
                                    ct_encoding_attention_mask(enc, w) + n);
            e.special_tokens_mask.assign(ct_encoding_special_tokens_mask(enc, w),
                                         ct_encoding_special_tokens_mask(enc, w) + n);
            e.sequence_ids.assign(ct_encoding_sequence_ids(enc, w),
                                  ct_encoding_sequence_ids(enc, w) + n);
            e.word_ids.assign(ct_encoding_word_ids(enc, w), ct_encoding_word_ids(enc, w) + n);
            const std::int32_t *off = ct_encoding_offsets(enc, w);
            const std::int32_t *bytes = ct_encoding_byte_offsets(enc, w);
            for (std::size_t i = 0; i < n; i++) {
                e.offsets.push_back(std::make_pair(off[2 * i], off[2 * i + 1]));
                e.byte_offsets.push_back(std::make_pair(bytes[2 * i], bytes[2 * i + 1]));
            }
        }
        return out;
    }

    ct_tokenizer *tok_ = nullptr;
};

// ---- the trainer ----------------------------------------------------------------

// The distributed state: which process of a job this is, and the
// collectives joining the processes. Options as text keys (see dist.h);
// none: all from the launcher's environment.
class dist {
public:
    typedef std::vector<std::pair<std::string, std::string> > options;
    dist() : dist(options()) {}
    dist(std::initializer_list<std::pair<std::string, std::string> > list)
        : dist(options(list)) {}
    explicit dist(const options &opts) {
        with_options(opts, [this](const ct_dist_options *o) { return ct_dist_create(o, &dist_); });
    }

    // Calls make(o) with the options as a ct_dist_options, freed after; throws
    // what the setting or make failed with.
    template <typename Make> static void with_options(const options &opts, Make make) {
        ct_dist_options *o = nullptr;
        check(ct_dist_options_create(&o));
        ct_status st = CT_OK;
        for (std::size_t i = 0; i < opts.size() && st == CT_OK; i++)
            st = ct_dist_options_set(o, opts[i].first.c_str(), opts[i].second.c_str());
        if (st == CT_OK)
            st = make(o);
        std::string text = st != CT_OK ? ct_last_error() : "";
        ct_dist_options_free(o);
        if (st != CT_OK)
            throw error(st, text);
    }
    dist(const dist &) = delete;
    dist &operator=(const dist &) = delete;
    dist(dist &&other) noexcept : dist_(other.dist_) { other.dist_ = nullptr; }
    dist &operator=(dist &&other) noexcept {
        std::swap(dist_, other.dist_);
        return *this;
    }
    ~dist() { ct_dist_free(dist_); }

    ct_dist *get() const noexcept { return dist_; }
    int rank() const { return ct_dist_rank(live()); }
    int world_size() const { return ct_dist_world_size(live()); }
    int local_rank() const { return ct_dist_local_rank(live()); }
    int local_world_size() const { return ct_dist_local_world_size(live()); }
    std::string backend() const { return ct_dist_backend(live()); }

    void allreduce(float *data, std::size_t count, ct_reduce_op op = CT_REDUCE_SUM) {
        check(ct_dist_allreduce(live(), data, count, CT_DTYPE_F32, op));
    }
    void broadcast(void *data, std::size_t bytes, int root = 0) {
        check(ct_dist_broadcast(live(), data, bytes, root));
    }
    void barrier() { check(ct_dist_barrier(live())); }

private:
    ct_dist *live() const {
        if (!dist_)
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::dist (moved from)");
        return dist_;
    }
    ct_dist *dist_ = nullptr;
};

// Authenticated connections of a job's own (ct_rendezvous_*): the tcp
// backend's handshake under the job's secret, for programs that meet over
// sockets of their own. Options as dist's (secret, secret_file); none: the
// environment. accept() and connect() give a blocking socket the caller
// closes; accept() gives -1 when the time passed. A refused peer throws
// CT_ERR_DIST (trying again will not help), one not reached CT_ERR_IO.
class rendezvous {
public:
    explicit rendezvous(const std::string &job, const dist::options &opts = dist::options()) {
        dist::with_options(opts, [this, &job](const ct_dist_options *o) {
            return ct_rendezvous_create(o, job.c_str(), &rv_);
        });
    }
    rendezvous(const rendezvous &) = delete;
    rendezvous &operator=(const rendezvous &) = delete;
    rendezvous(rendezvous &&other) noexcept : rv_(other.rv_) { other.rv_ = nullptr; }
    rendezvous &operator=(rendezvous &&other) noexcept {
        std::swap(rv_, other.rv_);
        return *this;
    }
    ~rendezvous() { ct_rendezvous_free(rv_); }

    ct_rendezvous *get() const noexcept { return rv_; }
    bool has_secret() const { return ct_rendezvous_has_secret(live()) != 0; }
    // A peer that proved itself on listen_fd (made non-blocking), or -1.
    int accept(int listen_fd, double timeout_s, std::string *peer = nullptr) {
        char addr[128] = "";
        int fd = -1;
        check(ct_rendezvous_accept(live(), listen_fd, timeout_s, &fd, addr, sizeof addr));
        if (peer)
            *peer = addr;
        return fd;
    }
    int connect(const std::string &host, int port, double timeout_s) {
        int fd = -1;
        check(ct_rendezvous_connect(live(), host.c_str(), port, timeout_s, &fd));
        return fd;
    }

private:
    ct_rendezvous *live() const {
        if (!rv_)
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::rendezvous (moved from)");
        return rv_;
    }
    ct_rendezvous *rv_ = nullptr;
};

// output_dir held for a whole run of a program (ct_output_lock_create):
// made when missing, locked until destruction; another run holding it
// throws cputrain::error with CT_ERR_BUSY naming the holder's pid. A
// trainer of this process training into the folder meanwhile joins it.
class output_lock {
public:
    explicit output_lock(const std::string &output_dir) {
        check(ct_output_lock_create(output_dir.c_str(), &lock_));
    }
    output_lock(const output_lock &) = delete;
    output_lock &operator=(const output_lock &) = delete;
    output_lock(output_lock &&other) noexcept : lock_(other.lock_) { other.lock_ = nullptr; }
    output_lock &operator=(output_lock &&other) noexcept {
        std::swap(lock_, other.lock_);
        return *this;
    }
    ~output_lock() { ct_output_lock_free(lock_); }
    // Let go of the folder now (the destructor then does nothing).
    void release() noexcept {
        ct_output_lock_free(lock_);
        lock_ = nullptr;
    }
    bool held() const noexcept { return lock_ != nullptr; }

private:
    ct_output_lock *lock_ = nullptr;
};

// A run's trainer_state.json read back (ct_trainer_state_load), as
// Transformers' TrainerState.load_from_json: the path is the file or the
// folder holding it. log_history()[i] maps each key to its number (a key
// written twice counts once, with its last value); number("global_step")
// throws CT_ERR_NOT_FOUND when the file has none. A malformed file throws
// cputrain::error naming the file and field.
class trainer_state {
public:
    typedef std::vector<std::pair<std::string, double>> entry;

    explicit trainer_state(const std::string &path) {
        ct_trainer_state *s = nullptr;
        check(ct_trainer_state_load(path.c_str(), &s));
        std::unique_ptr<ct_trainer_state, void (*)(ct_trainer_state *)> owned(
            s, ct_trainer_state_free);
        for (size_t i = 0, n = ct_trainer_state_log_count(s); i < n; i++) {
            entry e;
            for (size_t k = 0, nk = ct_trainer_state_log_key_count(s, i); k < nk; k++) {
                size_t len = 0;
                const char *key = ct_trainer_state_log_key(s, i, k, &len);
                double v = 0;
                check(ct_trainer_state_log_value(s, i, k, &v));
                e.emplace_back(std::string(key, len), v);
            }
            log_.push_back(std::move(e));
        }
        state_ = std::move(owned);
    }

    const std::vector<entry> &log_history() const noexcept { return log_; }
    double number(const std::string &key) const {
        double v = 0;
        check(ct_trainer_state_get_number(state_.get(), key.c_str(), &v));
        return v;
    }

private:
    std::unique_ptr<ct_trainer_state, void (*)(ct_trainer_state *)> state_{nullptr,
                                                                          ct_trainer_state_free};
    std::vector<entry> log_;
};

// A ct_trainer: Hugging Face Trainer's loop. The model and the datasets
// given to it must outlive it. Callbacks are std::functions; an exception
// thrown by one never crosses the C library: training stops at once and
// train() rethrows it. Move-only; a moved-from trainer is empty.
class trainer {
public:
    // (event, step, max_steps, epoch, log_json or nullptr) -> true to stop
    // (train() then throws CT_ERR_CANCELLED).
    typedef std::function<bool(ct_event, std::int64_t, std::int64_t, double, const char *)>
        progress_fn;
    // At eval_strategy points: report metrics with report_metric().
    typedef std::function<void(trainer &)> eval_fn;
    // compute_metrics: every evaluation example's logits (shape as predict()
    // gives it) and labels (class ids as dataset::labels, or real ones as
    // dataset::float_labels: the other pointer is null); report with
    // report_metric() under bare names ("accuracy"), which get Trainer's
    // "eval_" prefix.
    struct eval_prediction {
        const float *logits;
        std::vector<std::int64_t> shape;
        const std::int32_t *labels;
        const float *float_labels;
        std::size_t n_labels;
    };
    typedef std::function<void(trainer &, const eval_prediction &)> metrics_fn;

    trainer(model &m, const training_args &args) : state_(new state) {
        if (!m.get())
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::model (moved from)");
        state_->args = args;  // kept for the terminal progress bar
        state_->owner = this;
        check(ct_trainer_create(m.get(), args.get(), &trainer_));
    }
    trainer(const trainer &) = delete;
    trainer &operator=(const trainer &) = delete;
    trainer(trainer &&other) noexcept : trainer_(other.trainer_), state_(std::move(other.state_)) {
        other.trainer_ = nullptr;
        if (state_)
            state_->owner = this;
    }
    trainer &operator=(trainer &&other) noexcept {
        std::swap(trainer_, other.trainer_);
        std::swap(state_, other.state_);
        if (state_)
            state_->owner = this;
        if (other.state_)
            other.state_->owner = &other;
        return *this;
    }
    ~trainer() { ct_trainer_free(trainer_); }

    ct_trainer *get() const noexcept { return trainer_; }

    void set_train_dataset(const dataset &d) {
        check(ct_trainer_set_train_dataset(live(), d.get()));
    }
    // Train data-parallel over d (which must outlive the trainer).
    void set_dist(dist &d) { check(ct_trainer_set_dist(live(), d.get())); }
    // Save `tok` beside the model and in every checkpoint (its four files),
    // as Trainer saves its processing_class. Borrowed: `tok` must outlive
    // the trainer, or be cleared first.
    void set_tokenizer(const tokenizer &tok) {
        if (!tok.get())
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::tokenizer (moved from)");
        check(ct_trainer_set_tokenizer(live(), tok.get()));
    }
    void clear_tokenizer() { check(ct_trainer_set_tokenizer(live(), nullptr)); }
    // An empty function removes the callback.
    void on_progress(progress_fn fn) {
        ct_trainer *t = live();
        state_->progress = std::move(fn);
        check(ct_trainer_set_progress_callback(t, state_->progress ? progress_trampoline : nullptr,
                                               state_.get()));
    }
    // The library's own one-line bar on stderr (when it is a terminal and
    // disable_tqdm is off) and log lines on stdout.
    void progress_to_terminal() {
        ct_trainer *t = live();
        state_->progress = progress_fn();
        check(ct_trainer_set_progress_to_terminal(t));
    }
    void on_evaluate(eval_fn fn) {
        ct_trainer *t = live();
        state_->evaluate = std::move(fn);
        check(ct_trainer_set_eval_callback(t, state_->evaluate ? eval_trampoline : nullptr,
                                           state_.get()));
    }

    // Trainer's eval_dataset (borrowed: it must outlive training): each
    // evaluation logs eval_loss over it, the metrics callback's metrics and
    // the speed figures.
    void set_eval_dataset(const dataset &d) {
        check(ct_trainer_set_eval_dataset(live(), d.get()));
    }
    // An empty function removes the callback.
    void on_compute_metrics(metrics_fn fn) {
        ct_trainer *t = live();
        state_->metrics = std::move(fn);
        check(ct_trainer_set_metrics_callback(t, state_->metrics ? metrics_trampoline : nullptr,
                                              state_.get()));
    }
    // EarlyStoppingCallback(patience, threshold); patience 0 turns it off.
    void set_early_stopping(int patience, double threshold = 0.0) {
        check(ct_trainer_set_early_stopping(live(), patience, threshold));
    }
    // Masked-LM masking at batch time (DataCollatorForLanguageModeling, or
    // with whole_word DataCollatorForWholeWordMask); needs set_tokenizer.
    void set_mlm_masking(double probability = 0.15, bool whole_word = false) {
        check(ct_trainer_set_mlm_masking(live(), probability, whole_word ? 1 : 0));
    }

    // Train (resuming when resume_from_checkpoint says so) and save into
    // output_dir. Rethrows what a callback threw.
    void train() {
        ct_trainer *t = live();
        state_->pending = std::exception_ptr();
        ct_status st = ct_trainer_train(t);
        std::string text = st != CT_OK ? ct_last_error() : "";
        if (state_->pending) {
            std::exception_ptr e = state_->pending;
            state_->pending = std::exception_ptr();
            std::rethrow_exception(e);
        }
        if (st != CT_OK)
            throw error(st, text);
    }
    // From the evaluation callback: "name": value in the evaluation's log entry.
    void report_metric(const std::string &name, double value) {
        check(ct_trainer_report_metric(live(), name.c_str(), value));
    }
    double evaluate_loss(const dataset &d) {
        double loss = 0;
        check(ct_trainer_evaluate_loss(live(), d.get(), &loss));
        return loss;
    }
    // Logits for every example of d, in eval mode: QA [N, T, 2],
    // classification [N, num_labels], MLM [N, T, V] (see ct_trainer_predict).
    struct predictions {
        std::vector<float> data;
        std::vector<std::int64_t> shape;
    };
    predictions predict(const dataset &d) {
        predictions p;
        int ndim = 0;
        std::int64_t shape[3] = {0, 0, 0};
        std::size_t n = 1;
        check(ct_trainer_predict(live(), d.get(), nullptr, 0, &ndim, shape));
        p.shape.assign(shape, shape + ndim);
        for (int i = 0; i < ndim; i++)
            n *= static_cast<std::size_t>(shape[i]);
        p.data.resize(n);
        if (n)
            check(ct_trainer_predict(live(), d.get(), p.data.data(), n, nullptr, nullptr));
        return p;
    }
    // Ask train() to stop at the next step and save a checkpoint (it then
    // throws CT_ERR_CANCELLED). Only sets a flag: safe from a signal handler
    // or another thread, given the raw handle get() for a handler.
    void cancel() noexcept { ct_trainer_cancel(trainer_); }

    std::int64_t global_step() const { return ct_trainer_global_step(live()); }
    std::int64_t max_steps() const { return ct_trainer_max_steps(live()); }
    double train_loss() const { return ct_trainer_train_loss(live()); }
    // The log history as JSON text (an array of objects).
    std::string log_history() const { return ct_trainer_log_history(live()); }
    // The trainer's optimizer, borrowed; throws CT_ERR_STATE before train().
    optimizer optim() {
        ct_optim *o = ct_trainer_optim(live());
        if (!o)
            throw error(CT_ERR_STATE, "the trainer has no optimizer before train()");
        return optimizer(o, false);
    }

private:
    // Lives on the heap so the address given to the library as `user`
    // stays put when the trainer object is moved.
    struct state {
        progress_fn progress;
        eval_fn evaluate;
        metrics_fn metrics;
        training_args args;
        trainer *owner = nullptr;
        std::exception_ptr pending;
    };

    static int progress_trampoline(void *user, ct_event event, std::int64_t step,
                                   std::int64_t max_steps, double epoch, const char *log_json) {
        state *s = static_cast<state *>(user);
        if (s->pending)
            return 1;
        try {
            return s->progress(event, step, max_steps, epoch, log_json) ? 1 : 0;
        } catch (...) {
            s->pending = std::current_exception();
            return 1;
        }
    }
    static ct_status eval_trampoline(void *user, ct_trainer *) {
        state *s = static_cast<state *>(user);
        try {
            s->evaluate(*s->owner);
            return CT_OK;
        } catch (const error &e) {
            s->pending = std::current_exception();
            return e.status() != CT_OK ? e.status() : CT_ERR_CANCELLED;
        } catch (...) {
            s->pending = std::current_exception();
            return CT_ERR_CANCELLED;
        }
    }

    static ct_status metrics_trampoline(void *user, ct_trainer *, const float *logits, int ndim,
                                        const std::int64_t *shape, const std::int32_t *labels,
                                        const float *float_labels, std::size_t n_labels) {
        state *s = static_cast<state *>(user);
        try {
            eval_prediction p = {logits, std::vector<std::int64_t>(shape, shape + ndim), labels,
                                 float_labels, n_labels};
            s->metrics(*s->owner, p);
            return CT_OK;
        } catch (const error &e) {
            s->pending = std::current_exception();
            return e.status() != CT_OK ? e.status() : CT_ERR_CANCELLED;
        } catch (...) {
            s->pending = std::current_exception();
            return CT_ERR_CANCELLED;
        }
    }

    ct_trainer *live() const {
        if (!trainer_)
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::trainer (moved from)");
        return trainer_;
    }

    ct_trainer *trainer_ = nullptr;
    std::unique_ptr<state> state_;
};

// The metrics of run_glue.py and run_ner.py (ct_metric_*, ct_seqeval):
// scikit-learn's, SciPy's and seqeval's definitions.
namespace metrics {

inline double accuracy(const std::vector<std::int32_t> &predictions,
                       const std::vector<std::int32_t> &references) {
    double out = 0;
    if (predictions.size() != references.size())
        throw error(CT_ERR_INVALID_ARG, "metrics::accuracy: predictions and references differ in size");
    check(ct_metric_accuracy(predictions.data(), references.data(), predictions.size(), &out));
    return out;
}
inline double f1(const std::vector<std::int32_t> &predictions,
                 const std::vector<std::int32_t> &references, int num_labels = 2,
                 ct_average average = CT_AVERAGE_BINARY) {
    double out = 0;
    if (predictions.size() != references.size())
        throw error(CT_ERR_INVALID_ARG, "metrics::f1: predictions and references differ in size");
    check(ct_metric_f1(predictions.data(), references.data(), predictions.size(), num_labels,
                       average, &out));
    return out;
}
inline double matthews(const std::vector<std::int32_t> &predictions,
                       const std::vector<std::int32_t> &references, int num_labels) {
    double out = 0;
    if (predictions.size() != references.size())
        throw error(CT_ERR_INVALID_ARG, "metrics::matthews: predictions and references differ in size");
    check(ct_metric_matthews(predictions.data(), references.data(), predictions.size(),
                             num_labels, &out));
    return out;
}
// NaN when either side is constant.
inline double pearson(const std::vector<double> &x, const std::vector<double> &y) {
    double out = 0;
    if (x.size() != y.size())
        throw error(CT_ERR_INVALID_ARG, "metrics::pearson: x and y differ in size");
    check(ct_metric_pearson(x.data(), y.data(), x.size(), &out));
    return out;
}
inline double spearman(const std::vector<double> &x, const std::vector<double> &y) {
    double out = 0;
    if (x.size() != y.size())
        throw error(CT_ERR_INVALID_ARG, "metrics::spearman: x and y differ in size");
    check(ct_metric_spearman(x.data(), y.data(), x.size(), &out));
    return out;
}

struct entity_scores {
    double precision = 0, recall = 0, f1 = 0;
    std::int64_t number = 0;  // entities of the type in the references
};

// Entity-level scores over sentences of tag ids into `tags` (id2label).
class seqeval {
public:
    explicit seqeval(const std::vector<std::string> &tags,
                     ct_seqeval_mode mode = CT_SEQEVAL_DEFAULT) {
        std::vector<const char *> names;
        for (const auto &t : tags)
            names.push_back(t.c_str());
        check(ct_seqeval_create(names.data(), names.size(), mode, &s_));
    }
    seqeval(const seqeval &) = delete;
    seqeval &operator=(const seqeval &) = delete;
    seqeval(seqeval &&other) noexcept : s_(other.s_) { other.s_ = nullptr; }
    seqeval &operator=(seqeval &&other) noexcept {
        std::swap(s_, other.s_);
        return *this;
    }
    ~seqeval() { ct_seqeval_free(s_); }

    // One sentence; positions whose reference is -100 are skipped.
    void add(const std::vector<std::int32_t> &predictions,
             const std::vector<std::int32_t> &references) {
        if (predictions.size() != references.size())
            throw error(CT_ERR_INVALID_ARG, "seqeval::add: predictions and references differ in size");
        check(ct_seqeval_add(live(), predictions.data(), references.data(), predictions.size()));
    }
    // Micro-averaged over every entity; accuracy over the tokens.
    entity_scores overall(double *accuracy = nullptr) const {
        entity_scores out;
        check(ct_seqeval_overall(live(), &out.precision, &out.recall, &out.f1, accuracy));
        for (std::size_t i = 0; i < ct_seqeval_type_count(live()); i++)
            out.number += by_type(i).second.number;
        return out;
    }
    // The types seen, sorted by name, with their scores.
    std::vector<std::pair<std::string, entity_scores> > types() const {
        std::vector<std::pair<std::string, entity_scores> > out;
        for (std::size_t i = 0; i < ct_seqeval_type_count(live()); i++)
            out.push_back(by_type(i));
        return out;
    }

private:
    std::pair<std::string, entity_scores> by_type(std::size_t i) const {
        entity_scores e;
        check(ct_seqeval_type_scores(live(), i, &e.precision, &e.recall, &e.f1, &e.number));
        return {ct_seqeval_type_name(live(), i), e};
    }
    ct_seqeval *live() const {
        if (!s_)
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::metrics::seqeval (moved from)");
        return s_;
    }
    ct_seqeval *s_ = nullptr;
};

} // namespace metrics

// The workflow of an example script around the trainer (ct_workflow): the
// job and log levels, output_dir held with run_qa.py's rule, results files,
// the model card, progress bars. Borrows its training_args, which must
// outlive it.
class workflow {
public:
    workflow(const std::string &script, training_args &args) {
        check(ct_workflow_create(script.c_str(), args.get(), &wf_));
    }
    workflow(const workflow &) = delete;
    workflow &operator=(const workflow &) = delete;
    workflow(workflow &&other) noexcept : wf_(other.wf_) { other.wf_ = nullptr; }
    workflow &operator=(workflow &&other) noexcept {
        std::swap(wf_, other.wf_);
        return *this;
    }
    ~workflow() { ct_workflow_free(wf_); }

    ct_workflow *get() const noexcept { return wf_; }
    void join() { check(ct_workflow_join(live())); }
    // The job, after join() (owned by the workflow: not a cputrain::dist).
    ct_dist *dist() const { return ct_workflow_dist(live()); }
    bool is_main() const { return ct_workflow_is_main(live()) != 0; }
    void hold_output_dir(bool training) {
        check(ct_workflow_hold_output_dir(live(), training ? 1 : 0));
    }
    void progress(const std::string &what, std::size_t done, std::size_t total) {
        ct_workflow_progress(live(), what.c_str(), done, total);
    }
    // metric_for_best_model against what the evaluation reports (no eval_).
    void check_best_metric(const std::vector<std::string> &reported) const {
        std::vector<const char *> names;
        for (const auto &m : reported)
            names.push_back(m.c_str());
        check(ct_workflow_check_best_metric(live(), names.data(), names.size()));
    }
    void save_metrics(const std::string &split,
                      const std::vector<std::pair<std::string, double> > &metrics,
                      const std::vector<std::string> &integers = {}) const {
        std::vector<const char *> names;
        std::vector<double> values;
        std::vector<int> is_int;
        for (const auto &m : metrics) {
            names.push_back(m.first.c_str());
            values.push_back(m.second);
            is_int.push_back(std::find(integers.begin(), integers.end(), m.first) !=
                             integers.end());
        }
        check(ct_workflow_save_metrics(live(), split.c_str(), names.data(), values.data(),
                                       is_int.data(), names.size()));
    }
    void write_model_card(const trainer &t, const std::string &task, const std::string &base,
                          bool fine_tuned, const std::string &dataset, bool dataset_is_named,
                          const std::vector<std::pair<std::string, double> > &metrics = {}) const {
        std::vector<const char *> names;
        std::vector<double> values;
        for (const auto &m : metrics) {
            names.push_back(m.first.c_str());
            values.push_back(m.second);
        }
        check(ct_workflow_write_model_card(live(), t.get(), task.c_str(), base.c_str(),
                                           fine_tuned ? 1 : 0, dataset.c_str(),
                                           dataset_is_named ? 1 : 0, names.data(),
                                           values.data(), names.size()));
    }
    // --dataset_name read from a folder ("" for $HF_DATASETS_CACHE).
    static std::string dataset_file(const std::string &dir, const std::string &name,
                                    const std::string &split, const std::string &official = "") {
        std::vector<char> path(4096);
        check(ct_workflow_dataset_file(dir.empty() ? nullptr : dir.c_str(), name.c_str(),
                                       split.c_str(), official.empty() ? nullptr : official.c_str(),
                                       path.data(), path.size()));
        return std::string(path.data());
    }

private:
    ct_workflow *live() const {
        if (!wf_)
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::workflow (moved from)");
        return wf_;
    }
    ct_workflow *wf_ = nullptr;
};

// ---- the Hub ----------------------------------------------------------------------
// huggingface_hub's keyword arguments (hub.h); empty or negative keeps the
// default, read from the environment as huggingface_hub reads it.
struct hub_options {
    std::string revision, repo_type, cache_dir, endpoint, token;
    int local_files_only = -1;  // -1: $HF_HUB_OFFLINE
    int timeout = 0;            // seconds; 0: $HF_HUB_DOWNLOAD_TIMEOUT, else 10
};

namespace detail {
class c_hub_options {
public:
    explicit c_hub_options(const hub_options &o) {
        check(ct_hub_options_create(&h_));
        const std::pair<const char *, const std::string *> text[] = {
            {"revision", &o.revision}, {"repo_type", &o.repo_type},
            {"cache_dir", &o.cache_dir}, {"endpoint", &o.endpoint}, {"token", &o.token}};
        try {
            for (const auto &kv : text)
                if (!kv.second->empty())
                    check(ct_hub_options_set(h_, kv.first, kv.second->c_str()));
            if (o.local_files_only >= 0)
                check(ct_hub_options_set(h_, "local_files_only",
                                         o.local_files_only ? "true" : "false"));
            if (o.timeout > 0)
                check(ct_hub_options_set(h_, "timeout", std::to_string(o.timeout).c_str()));
        } catch (...) {
            ct_hub_options_free(h_);
            throw;
        }
    }
    c_hub_options(const c_hub_options &) = delete;
    c_hub_options &operator=(const c_hub_options &) = delete;
    ~c_hub_options() { ct_hub_options_free(h_); }
    const ct_hub_options *get() const noexcept { return h_; }

private:
    ct_hub_options *h_ = nullptr;
};
} // namespace detail

// hf_hub_download: the local path of `filename` of `repo_id` in the Hub
// cache, downloaded when needed.
inline std::string hub_download(const std::string &repo_id, const std::string &filename,
                                const hub_options &o = {}) {
    detail::c_hub_options c(o);
    std::vector<char> path(4096);
    check(ct_hub_download(repo_id.c_str(), filename.c_str(), c.get(), path.data(), path.size()));
    return std::string(path.data());
}

// The folder from_pretrained reads: a local folder as it is, else the Hub
// model's snapshot completed in the cache.
inline std::string model_folder(const std::string &name_or_path, const hub_options &o = {}) {
    detail::c_hub_options c(o);
    std::vector<char> path(4096);
    check(ct_hub_model_folder(name_or_path.c_str(), c.get(), path.data(), path.size()));
    return std::string(path.data());
}

// ---- data tables --------------------------------------------------------------------
// One cell of a table: its type, its text (a string's UTF-8, a number or a
// boolean as the file writes it; empty for null and lists), a list's items.
struct value {
    ct_value_type type = CT_VALUE_NULL;
    std::string text;
    std::vector<value> items;
};

// The records of a data file as the datasets library reads them (table.h):
// CSV, JSON (lines), Parquet, Arrow; or a dataset's split from the datasets
// cache and the Hub.
class table {
public:
    static table load(const std::string &path) {
        ct_table *t = nullptr;
        check(ct_table_load(path.c_str(), &t));
        return table(t);
    }
    // datasets.load_dataset(name, config)[split]; an empty config: the one there is.
    static table load_dataset(const std::string &name, const std::string &config,
                              const std::string &split, const hub_options &o = {}) {
        detail::c_hub_options c(o);
        ct_table *t = nullptr;
        check(ct_table_load_dataset(name.c_str(), config.empty() ? nullptr : config.c_str(),
                                    split.c_str(), c.get(), &t));
        return table(t);
    }
    std::size_t rows() const { return ct_table_rows(live()); }
    std::size_t columns() const { return ct_table_columns(live()); }
    std::string column_name(std::size_t column) const {
        const char *name = ct_table_column_name(live(), column);
        if (!name)
            throw error(CT_ERR_INVALID_ARG, "column " + std::to_string(column) +
                                                " is past the table's " +
                                                std::to_string(columns()));
        return name;
    }
    std::size_t column_index(const std::string &name) const {
        std::size_t k = 0;
        check(ct_table_column_index(live(), name.c_str(), &k));
        return k;
    }
    ct_value_type column_type(std::size_t column) const {
        return ct_table_column_type(live(), column);
    }
    value cell(std::size_t row, std::size_t column) const {
        value v;
        const char *text = nullptr;
        std::size_t len = 0;
        v.type = ct_table_cell(live(), row, column, &text, &len);
        if (text)
            v.text.assign(text, len);
        for (std::size_t i = 0; i < ct_table_list_size(live(), row, column); i++) {
            value item;
            item.type = ct_table_list_item(live(), row, column, i, &text, &len);
            if (text)
                item.text.assign(text, len);
            v.items.push_back(item);
        }
        return v;
    }

    explicit table(ct_table *adopt) noexcept : t_(adopt) {}
    table(const table &) = delete;
    table &operator=(const table &) = delete;
    table(table &&other) noexcept : t_(other.t_) { other.t_ = nullptr; }
    table &operator=(table &&other) noexcept {
        std::swap(t_, other.t_);
        return *this;
    }
    ~table() { ct_table_free(t_); }
    const ct_table *get() const noexcept { return t_; }

private:
    const ct_table *live() const {
        if (!t_)
            throw error(CT_ERR_INVALID_ARG, "use of an empty cputrain::table (moved from)");
        return t_;
    }
    ct_table *t_ = nullptr;
};

} // namespace cputrain

#endif // CPUTRAIN_HPP

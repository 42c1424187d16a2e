// The commands of `tenon` (cli.hpp): build the config's model, train it on the corpora,
// save and load it, evaluate and predict. The only file of the tool that instantiates the
// models' code (AnyModel over the two kinds of input it trains).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <variant>

#include <unistd.h>

#include "cli.hpp"
#include "tenon/config/registry.hpp"
#include "tenon/data/batching.hpp"
#include "tenon/data/to_categorical.hpp"
#include "tenon/error.hpp"
#include "tenon/loss/categorical_crossentropy.hpp"
#include "tenon/optim/optimizer.hpp"
#include "tenon/random.hpp"

namespace tenon::cli {
namespace {

namespace fs = std::filesystem;
using ImageModel = AnyModel<Floats2d, Floats2d>;
using TextModel = AnyModel<List<Ints2d>, Floats2d>;
using AnyOf = std::variant<ImageModel, TextModel>;

// [training]: what train reads (config::Args: each value typed and checked, E311 ... E314, and
// a key it does not read is E312).
struct Training {
    std::uint64_t seed = 0;
    std::size_t max_epochs = 1;
    std::size_t batch_size = 128;
    std::optional<std::vector<std::string>> labels;
    OptimizerOptions optimizer;
    // [training.batcher]: spaCy's batch_by_words.v1 / batch_by_sequence.v1, a size that may be
    // a schedule (it goes on across epochs, as spaCy's).
    bool by_words = false;
    std::optional<Schedule> batch_schedule;
    double tolerance = 0.2;
    bool discard_oversize = false;
};

// An optimizer option given as a section is a schedule ([training.optimizer.learn_rate]
// with @schedules = "warmup_linear.v1", ...): Optimizer::schedule, stepped after each update.
using Scheduled = std::vector<std::pair<std::string, Schedule>>;

Optimizer make_optimizer(const config::Config& cfg, OptimizerOptions& o) {
    const config::Value* v = cfg.find("training.optimizer");
    if (!v) return Optimizer(o);  // Adam's defaults
    Scheduled scheduled;
    const std::string where = config::where("training.optimizer");
    if (!v->is_section()) fail("tenon-E327", where + ": expected a section, found " + v->dump());
    const config::Value* ref = v->find("@optimizers");
    if (!ref || !ref->is_string())
        fail("tenon-E327", where + ": an optimizer needs @optimizers = \"Adam.v1\" or \"SGD.v1\"");
    const std::string name = ref->as_string();
    config::Args a(v->as_section(), "training.optimizer", name);
    // A number, or a schedule section (its first value checked when the optimizer is made).
    auto option = [&](const char* key, double fallback, bool required = false) {
        const config::Value* val = v->find(key);
        if (val && val->is_section()) {
            scheduled.emplace_back(key, a.get<Schedule>(key));
            return fallback;
        }
        return required ? a.get<double>(key) : a.get<double>(key, fallback);
    };
    if (name == "Adam.v1") {
        o.learn_rate = option("learn_rate", 0.001);
        o.L2 = option("L2", 0.0);
        o.beta1 = option("beta1", 0.9);
        o.beta2 = option("beta2", 0.999);
        o.eps = option("eps", 1e-8);
        o.grad_clip = option("grad_clip", 1.0);
        o.L2_is_weight_decay = a.get<bool>("L2_is_weight_decay", true);
        o.use_averages = a.get<bool>("use_averages", true);
    } else if (name == "SGD.v1") {
        o.learn_rate = option("learn_rate", 0.0, true);
        o.L2 = option("L2", 0.0);
        o.grad_clip = option("grad_clip", 1.0);
        o.use_averages = a.get<bool>("use_averages", true);
        o.beta1 = 0.0;
        o.beta2 = 0.0;
        o.L2_is_weight_decay = a.get<bool>("L2_is_weight_decay", true);
    } else {
        fail("tenon-E327", where + " @optimizers: no optimizer is registered as \"" + name +
                               "\"; the optimizers: Adam.v1, SGD.v1");
    }
    a.finish();
    Optimizer opt(o);  // tenon-E251 for an option out of range
    for (auto& [key, sch] : scheduled) opt.schedule(key, std::move(sch));
    return opt;
}

// [training.batcher] (spaCy's batchers): "spacy.batch_by_words.v1" (size, tolerance,
// discard_oversize) or "spacy.batch_by_sequence.v1" (size); size a number or a schedule.
void read_batcher(const config::Value& v, Training& t) {
    const std::string where = config::where("training.batcher");
    if (!v.is_section()) fail("tenon-E321", where + ": expected a section, found " + v.dump());
    const config::Value* ref = v.find("@batchers");
    if (!ref || !ref->is_string())
        fail("tenon-E321", where + ": a batcher needs @batchers = \"spacy.batch_by_words.v1\" or "
                                   "\"spacy.batch_by_sequence.v1\"");
    const std::string name = ref->as_string();
    config::Args a(v.as_section(), "training.batcher", name);
    if (name == "spacy.batch_by_words.v1") {
        t.by_words = true;
        t.batch_schedule = a.get<Schedule>("size");
        t.tolerance = a.get<double>("tolerance", 0.2);
        t.discard_oversize = a.get<bool>("discard_oversize", false);
    } else if (name == "spacy.batch_by_sequence.v1") {
        t.batch_schedule = a.get<Schedule>("size");
    } else {
        fail("tenon-E321", config::where("training.batcher", "@batchers") + ": no batcher is registered as \"" +
                               name + "\"; the batchers: spacy.batch_by_words.v1, spacy.batch_by_sequence.v1");
    }
    if (a.get<std::optional<std::string>>("get_length", std::nullopt))  // null: the documents' lengths
        fail("tenon-E321", config::where("training.batcher", "get_length") +
                               ": only null (the documents' lengths in tokens) is supported");
    a.finish();
}

Training read_training(const config::Config& cfg) {
    Training t;
    const config::Value* v = cfg.find("training");
    if (!v) return t;
    if (!v->is_section()) fail("tenon-E321", "[training]: expected a section, found " + v->dump());
    config::Section plain;  // the keys, without the optimizer's and batcher's subsections (read on their own)
    for (const auto& kv : v->as_section())
        if (kv.first != "optimizer" && kv.first != "batcher") plain.push_back(kv);
    config::Args a(plain, "training");
    t.seed = a.get<std::uint64_t>("seed", 0);
    t.max_epochs = a.get<std::size_t>("max_epochs", 1);
    const bool sized = a.has("batch_size");
    t.batch_size = a.get<std::size_t>("batch_size", 128);
    t.labels = a.get<std::optional<std::vector<std::string>>>("labels", std::nullopt);
    a.finish();
    if (t.max_epochs < 1) fail("tenon-E321", config::where("training", "max_epochs") + ": must be >= 1, found 0");
    if (t.batch_size < 1) fail("tenon-E321", config::where("training", "batch_size") + ": must be >= 1, found 0");
    if (const config::Value* b = v->find("batcher")) {
        if (sized)
            fail("tenon-E321", config::where("training", "batch_size") +
                                   ": give batch_size or [training.batcher], not both");
        read_batcher(*b, t);
    }
    if (t.labels && t.labels->empty())
        fail("tenon-E321", config::where("training", "labels") + ": an empty list (leave it out or null to take "
                                                                  "the training data's labels)");
    return t;
}

// The config's model as one of the two kinds the tool trains (E325 otherwise).
AnyOf build_any(const config::Config& cfg) {
    config::DynModel dm = config::build(cfg, "model");
    if (dm.is<Floats2d, Floats2d>()) return dm.take<Floats2d, Floats2d>();
    if (dm.is<List<Ints2d>, Floats2d>()) return dm.take<List<Ints2d>, Floats2d>();
    fail("tenon-E325", "[model]: a model from " + dm.in_name() + " to " + dm.out_name() +
                           "; tenon train runs models from Floats2d (images: tenon.IdxCorpus.v1) or from "
                           "List[Ints2d] (documents: tenon.JsonlCorpus.v1) to Floats2d (class scores)");
}

bool is_text(const AnyOf& m) { return std::holds_alternative<TextModel>(m); }

void check_kind(const AnyOf& m, const Corpus& c) {
    if (is_text(m) != c.text)
        fail("tenon-E322", c.where + ": " + (c.text ? "documents" : "images") + " for a model that takes " +
                               (is_text(m) ? "documents (List[Ints2d]): use tenon.JsonlCorpus.v1"
                                           : "Floats2d rows: use tenon.IdxCorpus.v1"));
}

// The label set: the config's [training] labels, else the training data's labels sorted
// (as numbers when all are integers).
std::vector<std::string> label_set(const Training& t, const Corpus& train) {
    if (t.labels) return *t.labels;
    std::vector<std::string> l = train.labels;
    std::sort(l.begin(), l.end());
    l.erase(std::unique(l.begin(), l.end()), l.end());
    const bool numbers = std::all_of(l.begin(), l.end(), [](const std::string& s) {
        return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    });
    if (numbers) std::sort(l.begin(), l.end(), [](const auto& a, const auto& b) { return std::stol(a) < std::stol(b); });
    return l;
}

Ints1d class_ids(const Corpus& c, const std::vector<std::string>& labels) {
    std::map<std::string, std::int32_t> index;
    for (std::size_t i = 0; i < labels.size(); ++i) index.emplace(labels[i], static_cast<std::int32_t>(i));
    Ints1d y({c.size()}, uninitialized);
    for (std::size_t i = 0; i < c.size(); ++i) {
        const auto it = index.find(c.labels[i]);
        if (it == index.end())
            fail("tenon-E324", c.where + ": example " + std::to_string(i + 1) + " has the label \"" + c.labels[i] +
                                   "\", which is not one of the model's " + std::to_string(labels.size()) +
                                   " labels (the training data's, or [training] labels)");
        y[i] = it->second;
    }
    return y;
}

// The rows (or documents) idx[b, e) of a corpus, as the model's input.
template <class In>
In gather(const Corpus& c, const std::vector<std::size_t>& idx, std::size_t b, std::size_t e) {
    if constexpr (std::is_same_v<In, Floats2d>) {
        const std::size_t w = c.X.shape(1);
        Floats2d X({e - b, w}, uninitialized);
        for (std::size_t i = b; i < e; ++i) std::copy_n(c.X.data() + idx[i] * w, w, X.data() + (i - b) * w);
        return X;
    } else {
        List<Ints2d> docs;
        for (std::size_t i = b; i < e; ++i) docs.push_back(c.docs[idx[i]]);
        return docs;
    }
}

std::size_t argmax_row(const Floats2d& P, std::size_t i) {
    std::size_t best = 0;
    for (std::size_t k = 1; k < P.shape(1); ++k)
        if (P(i, k) > P(i, best)) best = k;
    return best;
}

// Predictions in batches (the class index of each example, and its score).
template <class M>
std::vector<std::pair<std::size_t, float>> predict_all(const M& model, const Corpus& c, std::size_t batch) {
    using In = typename M::In;
    std::vector<std::size_t> idx(c.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::vector<std::pair<std::size_t, float>> out;
    for (std::size_t b = 0; b < c.size(); b += batch) {
        const std::size_t e = std::min(c.size(), b + batch);
        const Floats2d P = model.predict(gather<In>(c, idx, b, e));
        for (std::size_t i = 0; i < P.shape(0); ++i) {
            const std::size_t k = argmax_row(P, i);
            out.emplace_back(k, P(i, k));
        }
    }
    return out;
}

template <class M>
double accuracy(const M& model, const Corpus& c, const Ints1d& y) {
    const auto p = predict_all(model, c, 1024);
    std::size_t right = 0;
    for (std::size_t i = 0; i < p.size(); ++i) right += static_cast<std::int32_t>(p[i].first) == y[i];
    return p.empty() ? 0.0 : double(right) / double(p.size());
}

void check_width(const Node& model, std::size_t n_labels) {
    if (model.has_dim("nO") && model.get_dim("nO") != n_labels)
        fail("tenon-E324", "[model]: the model outputs " + std::to_string(model.get_dim("nO")) +
                               " scores per example but the data has " + std::to_string(n_labels) +
                               " labels (set the output layer's nO to " + std::to_string(n_labels) + " or leave it out)");
}

// Initialises from a sample of the corpus (its first 1000 examples), as Thinc.
template <class M>
void init_from(M& model, const Corpus& c, const Ints1d& y, std::size_t n_labels) {
    using In = typename M::In;
    const std::size_t n = std::min<std::size_t>(c.size(), 1000);
    std::vector<std::size_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    Ints1d ys({n}, uninitialized);
    for (std::size_t i = 0; i < n; ++i) ys[i] = y[i];
    check_width(model, n_labels);
    const In X = gather<In>(c, idx, 0, n);
    model.initialize(X, to_categorical(ys, n_labels));
}

// One line per node: indented by depth, its name, its widths (? where unknown) and its
// parameters' sizes.
void print_tree(const Node& n, int depth, std::size_t& total) {
    std::string line(static_cast<std::size_t>(2 * depth), ' ');
    line += n.name();
    for (const auto& d : n.dim_names())
        line += "  " + d + "=" + (n.has_dim(d) ? std::to_string(n.get_dim(d)) : std::string("?"));
    std::size_t params = 0;
    for (const auto& p : n.param_names())
        if (n.has_param(p)) params += n.get_param(p).size();
    if (params) line += "  (" + std::to_string(params) + " params)";
    total += params;
    std::printf("%s\n", line.c_str());
    n.for_each_child([&](const Node& c) { print_tree(c, depth + 1, total); });
}

Node& node_of(AnyOf& m) {
    return std::visit([](auto& x) -> Node& { return x; }, m);
}

// A trained directory: its config (with [training] labels) and the model, loaded.
struct Loaded {
    config::Config cfg;
    AnyOf model;
    std::vector<std::string> labels;
};
Loaded load_dir(const std::string& dir, const config::Overrides& overrides) {
    const fs::path cfg_path = fs::path(dir) / "config.cfg";
    const fs::path model_path = fs::path(dir) / "model.tenon";
    for (const auto& p : {cfg_path, model_path})
        if (!fs::is_regular_file(p))
            fail("tenon-E326", "'" + dir + "' is not a directory written by tenon train: it has no " +
                                   p.filename().string());
    config::Config cfg = config::Config::from_disk(cfg_path.string(), overrides);
    Training t = read_training(cfg);
    if (!t.labels) fail("tenon-E326", "'" + cfg_path.string() + "': [training] labels is missing (tenon train writes it)");
    AnyOf model = build_any(cfg);
    try {
        node_of(model).from_disk(model_path.string());  // tenon-E200 ... E208 say what differs
    } catch (Error& e) {
        e.set_message("'" + model_path.string() + "' (for the model of '" + cfg_path.string() + "'): " + e.message());
        throw;
    }
    check_width(node_of(model), t.labels->size());
    return {std::move(cfg), std::move(model), *t.labels};
}

// The progress bar (a terminal) or nothing (a log: the table's rows say enough).
struct Progress {
    bool on = isatty(fileno(stdout)) && isatty(fileno(stderr));
    void show(std::size_t epoch, std::size_t done, std::size_t total, double loss) const {
        if (!on) return;
        const std::size_t w = 30, k = total ? w * done / total : w;
        std::fprintf(stderr, "\r%3zu [%s%s] %3zu%%  loss %.4g ", epoch, std::string(k, '=').c_str(),
                     std::string(w - k, ' ').c_str(), total ? 100 * done / total : 100, loss);
        std::fflush(stderr);
    }
    void clear() const {
        if (on) std::fprintf(stderr, "\r%70s\r", "");
    }
};

// An epoch's batches over the shuffled examples: order[ends[k - 1] .. ends[k]) is batch k.
// [training] batch_size, or the batcher's (by words: the documents' tokens; a size schedule
// goes on from where the last epoch left it).
detail::BatchPlan epoch_batches(Training& t, const Corpus& train, const std::vector<std::size_t>& shuffled) {
    if (t.by_words && !train.text)
        fail("tenon-E321", config::where("training.batcher", "@batchers") +
                               ": spacy.batch_by_words.v1 batches documents; " + train.where + " holds images");
    // (A schedule is shared, not copied: the next epoch goes on with it.)
    const BatchSize size = t.batch_schedule ? BatchSize(*t.batch_schedule) : BatchSize(t.batch_size);
    detail::BatchPlan q;
    if (t.by_words) {
        std::vector<std::size_t> lengths(shuffled.size());
        for (std::size_t i = 0; i < shuffled.size(); ++i) lengths[i] = train.docs[shuffled[i]].shape(0);
        q = detail::plan_by_words(lengths, size, t.tolerance, t.discard_oversize, false);
    } else {
        q = detail::plan_batches(shuffled.size(), size, false);
    }
    detail::BatchPlan p;  // the batches' items as examples of the corpus
    p.ends = std::move(q.ends);
    p.order.reserve(q.order.size());
    for (std::size_t i : q.order) p.order.push_back(shuffled[i]);
    return p;
}

template <class M>
int train_loop(M& model, const config::Config& cfg, Training& t, Optimizer& opt, const Corpus& train,
               const Corpus& dev, const std::vector<std::string>& labels, const Options& o) {
    using In = typename M::In;
    const Ints1d y_train = class_ids(train, labels);
    const Ints1d y_dev = class_ids(dev, labels);
    init_from(model, train, y_train, labels.size());
    check_width(model, labels.size());
    CategoricalCrossentropy loss;
    std::mt19937_64 rng(t.seed);
    std::vector<std::size_t> order(train.size());
    std::iota(order.begin(), order.end(), 0);
    Progress bar;
    const char* rate_name = train.text ? "WORDS/S" : "EX/S";
    std::printf("%-4s %-8s %-10s %-8s %-9s %-7s\n", "E", "#", "LOSS", "DEV_ACC", rate_name, "SECS");
    std::printf("%-4s %-8s %-10s %-8s %-9s %-7s\n", "----", "--------", "----------", "--------", "---------",
                "-------");
    std::fflush(stdout);
    std::size_t steps = 0;
    for (std::size_t epoch = 1; epoch <= t.max_epochs; ++epoch) {
        const auto t0 = std::chrono::steady_clock::now();
        std::shuffle(order.begin(), order.end(), rng);
        const detail::BatchPlan plan = epoch_batches(t, train, order);
        const std::size_t batches = plan.ends.size();
        double epoch_loss = 0;
        std::size_t words = 0;
        for (std::size_t k = 0; k < batches; ++k) {
            const std::size_t b = k ? plan.ends[k - 1] : 0, e = plan.ends[k];
            const In X = gather<In>(train, plan.order, b, e);
            Ints1d y({e - b}, uninitialized);
            for (std::size_t i = b; i < e; ++i) y[i - b] = y_train[plan.order[i]];
            if constexpr (!std::is_same_v<In, Floats2d>)
                for (const auto& d : X) words += d.shape(0);
            auto [Yh, backprop] = model.begin_update(X);
            epoch_loss += loss.get_loss(Yh, y);  // tenon-E134 for scores that are not finite
            backprop.params_only(loss.get_grad(Yh, y));
            model.finish_update(opt);  // tenon-E250 for a gradient that is not finite
            opt.step_schedules();      // the scheduled options' next values (Thinc's order)
            ++steps;
            if ((k + 1) % std::max<std::size_t>(1, batches / 50) == 0 || k + 1 == batches)
                bar.show(epoch, k + 1, batches, epoch_loss);
        }
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        double acc;
        {
            std::optional<UseAverages> avg;
            if (opt.options().use_averages) avg.emplace(model, opt);
            acc = accuracy(model, dev, y_dev);
        }
        bar.clear();
        const double rate = (train.text ? double(words) : double(train.size())) / std::max(secs, 1e-9);
        std::printf("%-4zu %-8zu %-10.4f %-8.4f %-9.0f %-7.2f\n", epoch, steps, epoch_loss, acc, rate, secs);
        std::fflush(stdout);
    }
    // The directory: the config as run (overrides applied, [training] labels filled in), and
    // the model with the optimizer's averaged weights where it keeps them (as spaCy saves).
    std::error_code ec;
    fs::create_directories(o.dir, ec);
    if (ec || !fs::is_directory(o.dir))
        fail("tenon-E326", "--output '" + o.dir + "': cannot create the directory" + (ec ? " (" + ec.message() + ")" : ""));
    config::Value root = cfg.root();
    config::Value* tr = root.find("training");
    if (!tr) {
        root.as_section().emplace_back("training", config::Value(config::Section{}));
        tr = root.find("training");
    }
    config::ValueList l;
    for (const auto& s : labels) l.emplace_back(s);
    if (config::Value* have = tr->find("labels"))
        *have = config::Value(std::move(l));
    else
        tr->as_section().emplace_back("labels", config::Value(std::move(l)));
    const std::string cfg_out = (fs::path(o.dir) / "config.cfg").string();
    {
        std::FILE* f = std::fopen(cfg_out.c_str(), "wb");
        const std::string text = config::Config(root).to_str();
        if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0)
            fail("tenon-E326", "cannot write '" + cfg_out + "'");
    }
    const std::string model_out = (fs::path(o.dir) / "model.tenon").string();
    {
        std::optional<UseAverages> avg;
        if (opt.options().use_averages) avg.emplace(model, opt);
        model.to_disk(model_out);  // tenon-E208 when it cannot be written
    }
    std::printf("saved %s and %s\n", cfg_out.c_str(), model_out.c_str());
    return 0;
}

}  // namespace

// The config's model as a static C++ type (config::codegen): a config file, or a directory that
// tenon train wrote (its config.cfg, labels and all).
int codegen(const Options& o) {
    const fs::path given(o.config_path);
    const std::string cfg_path = fs::is_directory(given) ? (given / "config.cfg").string() : o.config_path;
    const config::Config cfg = config::Config::from_disk(cfg_path, o.overrides);
    const std::string header = config::codegen(cfg, "model", o.ns.empty() ? "tenon_model" : o.ns, o.config_path);
    if (o.dir.empty()) {
        std::fwrite(header.data(), 1, header.size(), stdout);
        return 0;
    }
    std::FILE* f = std::fopen(o.dir.c_str(), "wb");
    if (!f || std::fwrite(header.data(), 1, header.size(), f) != header.size() || std::fclose(f) != 0)
        fail("tenon-E326", "--output '" + o.dir + "': cannot write the header");
    std::fprintf(stderr, "wrote %s\n", o.dir.c_str());
    return 0;
}

int describe(const Options& o) {
    const config::Config cfg = config::Config::from_disk(o.config_path, o.overrides);
    if (o.no_data) {
        // Any model (a tagger too: List[Ints2d] -> List[Floats2d]), as the config builds it.
        const config::DynModel dm = config::build(cfg, "model");
        std::printf("%s: a model from %s to %s; widths from the config alone (? where the data decides)\n",
                    o.config_path.c_str(), dm.in_name().c_str(), dm.out_name().c_str());
        const auto steps = dm.step_nodes();
        std::size_t total = 0;
        int depth = 0;
        if (steps.size() > 1) {
            std::string chain;
            for (const Node* n : steps) chain += (chain.empty() ? "" : ">>") + n->name();
            std::printf("%s\n", chain.c_str());
            depth = 1;
        }
        for (const Node* n : steps) print_tree(*n, depth, total);
        if (total) std::printf("%zu parameters\n", total);
        return 0;
    }
    AnyOf model = build_any(cfg);
    std::string note;
    {
        const Training t = read_training(cfg);
        Corpus train = read_corpus(cfg, "corpora.train", true);
        check_kind(model, train);
        const auto labels = label_set(t, train);
        const Ints1d y = class_ids(train, labels);
        std::visit([&](auto& m) { init_from(m, train, y, labels.size()); }, model);
        note = "widths from the config and a sample of [corpora.train] (" + std::to_string(labels.size()) + " labels)";
    }
    std::printf("%s: a model from %s to Floats2d; %s\n", o.config_path.c_str(),
                is_text(model) ? "List[Ints2d]" : "Floats2d", note.c_str());
    std::size_t total = 0;
    // The AnyModel around the config's model adds nothing to see: print what it holds.
    const Node* root = &node_of(model);
    std::vector<const Node*> kids;
    root->for_each_child([&](const Node& c) { kids.push_back(&c); });
    if (kids.size() == 1) root = kids.front();
    print_tree(*root, 0, total);
    if (total) std::printf("%zu parameters\n", total);
    return 0;
}

int train(const Options& o) {
    const config::Config cfg = config::Config::from_disk(o.config_path, o.overrides);
    Training t = read_training(cfg);
    Optimizer opt = make_optimizer(cfg, t.optimizer);
    fix_random_seed(t.seed);
    AnyOf model = build_any(cfg);
    Corpus train = read_corpus(cfg, "corpora.train", true);
    check_kind(model, train);
    Corpus dev = read_corpus(cfg, "corpora.dev", true);
    check_kind(model, dev);
    const auto labels = label_set(t, train);
    std::printf("training %s: %zu examples in [corpora.train], %zu in [corpora.dev], %zu labels, %zu epoch%s\n",
                o.config_path.c_str(), train.size(), dev.size(), labels.size(), t.max_epochs,
                t.max_epochs == 1 ? "" : "s");
    return std::visit([&](auto& m) { return train_loop(m, cfg, t, opt, train, dev, labels, o); }, model);
}

int evaluate(const Options& o) {
    Loaded d = load_dir(o.dir, o.overrides);
    std::string which = o.corpus;
    if (which.empty()) which = d.cfg.find("corpora.test") ? "test" : "dev";
    const std::string path = "corpora." + which;
    Corpus c = read_corpus(d.cfg, path, true);
    check_kind(d.model, c);
    const Ints1d y = class_ids(c, d.labels);
    const auto t0 = std::chrono::steady_clock::now();
    const double acc = std::visit([&](auto& m) { return accuracy(m, c, y); }, d.model);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s on %s: accuracy %.4f (%zu examples, %.2f s)\n", o.dir.c_str(), config::where(path).c_str(), acc,
                c.size(), secs);
    return 0;
}

int predict(const Options& o) {
    Loaded d = load_dir(o.dir, o.overrides);
    Corpus c = read_inputs(o.input, is_text(d.model), o.limit);
    const auto p = std::visit([&](auto& m) { return predict_all(m, c, 1024); }, d.model);
    std::printf("# example\tlabel\tscore\n");
    for (std::size_t i = 0; i < p.size(); ++i)
        std::printf("%zu\t%s\t%.4f\n", i + 1, d.labels[p[i].first].c_str(), static_cast<double>(p[i].second));
    return 0;
}

}  // namespace tenon::cli

// The registry: Thinc's versioned names ("Relu.v1", "chain.v1", ...) mapped to factories that
// build models at run time from a config's sections (config/config.hpp):
//
//   auto cfg = config::Config::from_disk("mlp.cfg", {{"model.*.hidden.nO", "128"}});
//   AnyModel<Floats2d, Floats2d> model = config::build_model<Floats2d, Floats2d>(cfg, "model");
//
// A factory reads its arguments from an Args (each typed and checked: tenon-E311 ... E314) and
// returns a DynModel: a model whose data types are known at run time only. DynModel::take<In,
// Out>() turns it into an AnyModel<In, Out> (E316 when the types differ). A chain whose number
// of children the config decides is a DynChain<In, Out> (config/dyn_chain.hpp): its children
// are type-erased steps whose data types are checked against each other when it is built (E315).
// The built-in factories and the non-template code are in src/registry.cpp; this header
// declares what a user needs to register factories of their own (docs/configs.md).
#pragma once
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenon/config/config.hpp"
#include "tenon/config/dyn_chain.hpp"
#include "tenon/optim/schedules.hpp"

namespace tenon::config {

// A model built from a config whose data types are known at run time: one model, or a chain
// of models (kept flat: a chain in a chain adds its steps) that becomes a DynChain when taken.
// A layer that takes several data types, as Thinc's with_array.v1 does, is built once per
// type (one_of): the chain around it keeps the one whose input type is what the model before
// it outputs, and take<In, Out> the one of that signature.
class DynModel {
public:
    DynModel() = default;
    // Any tenon model (moved or copied in).
    template <class M>
        requires(Model<std::remove_cvref_t<M>> && !std::same_as<std::remove_cvref_t<M>, DynModel>)
    DynModel(M&& model)  // NOLINT(google-explicit-constructor): a factory returns a model as it is
    {
        detail::Steps steps;
        steps.push_back(std::make_unique<detail::StepOf<std::remove_cvref_t<M>>>(std::forward<M>(model)));
        alts_.push_back(std::move(steps));
    }
    DynModel(DynModel&&) noexcept = default;
    DynModel& operator=(DynModel&&) noexcept = default;
    DynModel(const DynModel& other);
    DynModel& operator=(const DynModel& other);
    ~DynModel();

    // The models one after another: each one's output type must be the next one's input type
    // (tenon-E315 names both config paths and both types). At least one model (E311).
    static DynModel chain(std::vector<DynModel> parts, const std::string& path = {});
    // One layer in several forms, each for another input type (E318 when two take the same).
    static DynModel one_of(std::vector<DynModel> forms);

    bool empty() const noexcept { return alts_.empty(); }
    // The data types, as Thinc spells them ("Floats2d", "List[Floats2d]", "Ragged"); for a
    // layer of several forms, each ("List[Floats2d] | Ragged").
    std::string in_name() const;
    std::string out_name() const;
    // Whether it is (or has a form that is) a model from In to Out.
    template <class In, class Out>
    bool is() const {
        return has(typeid(In), typeid(Out));
    }
    // Where in the config it was built ("model.*.relu1"); set by the builder.
    const std::string& path() const noexcept { return path_; }
    void set_path(std::string path);

    // The C++ expression that makes the same model (`tenon codegen`, docs/configs.md): a
    // factory gives its model's with with_code (`Relu<128>()`); a chain keeps each step's and
    // one_of each form's. A model with several steps (a chain) has its steps' code.
    DynModel&& with_code(std::string code) &&;
    // The code of the form from In to Out: its step's, or chain(...) of its steps'. A step whose
    // factory gave none is written `@[path] name@`, which codegen reports (tenon-E328).
    template <class In, class Out>
    std::string code() const {
        return code_of(typeid(In), typeid(Out));
    }
    std::string code_of(const std::type_info& in, const std::type_info& out) const;
    // Each form: its data types (Thinc's names) and its code.
    struct Form {
        std::string in, out, code;
    };
    std::vector<Form> forms() const;
    // The nodes of the steps of its one form (a model of several forms: the first's), in order:
    // what `tenon describe` prints for a model it cannot take as a type it knows.
    std::vector<const Node*> step_nodes() const;
    // Gives each step without code `mark` as its code (the builder: `@[path] name@`).
    void mark_uncoded(const std::string& mark);

    // The model as an AnyModel<In, Out> (this DynModel is left empty); tenon-E316 when the
    // model's data types are others.
    template <class In, class Out>
    AnyModel<In, Out> take() {
        detail::Steps steps = pick(typeid(In), typeid(Out), detail::data_type_name<In>(), detail::data_type_name<Out>());
        if (steps.size() == 1) return dynamic_cast<detail::TypedStep<In, Out>&>(*steps.front()).take();
        return DynChain<In, Out>(std::move(steps));
    }

private:
    bool has(const std::type_info& in, const std::type_info& out) const;
    detail::Steps pick(const std::type_info& in, const std::type_info& out, const std::string& in_name,
                       const std::string& out_name);
    std::vector<detail::Steps> alts_;  // the forms (one, for most), each a flat chain of steps
    std::string path_;
};

class Args;
using Factory = std::function<DynModel(Args&)>;

// A factory's arguments: the keys of its config section. Each get names the argument; reading
// one checks its type (E313) and range (E314); a required one that is missing is E311; after
// the factory returns, a key it never asked for is E312 (with the nearest name it asked for).
class Args {
public:
    Args(const Section& section, std::string path, std::string ref = {});
    // The section's path ("model.*.relu1").
    const std::string& path() const noexcept { return path_; }
    // Whether the argument is given (and not null).
    bool has(std::string_view name) const;

    // A required argument (E311 when missing). T: bool, an integer type, a floating-point type,
    // std::string, DynModel (a section with @layers / @architectures), Schedule (a number, or
    // a section with @schedules), std::optional or std::vector of these (a list, or for models
    // a section of [name.*.x] children).
    template <class T>
    T get(std::string_view name) {
        return convert<T>(require(name), name);
    }
    // An optional argument: `fallback` when it is missing.
    template <class T>
    T get(std::string_view name, T fallback) {
        const Value* v = take(name);
        return v ? convert<T>(*v, name) : std::move(fallback);
    }
    // A width (nO, nI, ...): a positive integer, or dyn when missing or null (Thinc's None).
    std::size_t dim(std::string_view name);
    // The positional children ([path.*.name] sections), built, in the order of the config.
    std::vector<DynModel> positional();
    // E312 for a key that no get asked for (called by the builder after the factory).
    void finish() const;

private:
    const Value* take(std::string_view name);
    const Value& require(std::string_view name);
    std::vector<DynModel> models(const Value& v, std::string_view name);

    template <class T>
    T convert(const Value& v, std::string_view name) {
        if constexpr (std::is_same_v<T, bool>) {
            return as_bool(v, name);
        } else if constexpr (std::is_same_v<T, DynModel>) {
            return model(v, name);
        } else if constexpr (std::is_same_v<T, Schedule>) {
            return schedule(v, name);
        } else if constexpr (std::is_integral_v<T>) {
            return static_cast<T>(as_int(v, name, static_cast<long double>(std::numeric_limits<T>::min()),
                                         static_cast<long double>(std::numeric_limits<T>::max())));
        } else if constexpr (std::is_floating_point_v<T>) {
            return static_cast<T>(as_number(v, name, static_cast<double>(std::numeric_limits<T>::max())));
        } else if constexpr (std::is_same_v<T, std::string>) {
            return as_string(v, name);
        } else if constexpr (detail::is_optional<T>) {
            if (v.is_null()) return T{};
            return convert<typename T::value_type>(v, name);
        } else if constexpr (std::is_same_v<T, std::vector<DynModel>>) {
            return models(v, name);
        } else if constexpr (detail::is_vector<T>) {
            T out;
            const ValueList& l = as_list(v, name);
            for (std::size_t i = 0; i < l.size(); ++i)
                out.push_back(convert<typename T::value_type>(l[i], std::string(name) + "[" + std::to_string(i) + "]"));
            return out;
        } else {
            static_assert(detail::always_false<T>, "Args::get<T>: T must be bool, an integer, a floating-point type, "
                                                   "std::string, DynModel, or std::optional / std::vector of these");
        }
    }
    bool as_bool(const Value& v, std::string_view name) const;
    long double as_int(const Value& v, std::string_view name, long double lo, long double hi) const;
    // A number (tenon-E313), finite ones within +-max (tenon-E314: 1e300 as a float).
    double as_number(const Value& v, std::string_view name, double max = std::numeric_limits<double>::max()) const;
    std::string as_string(const Value& v, std::string_view name) const;
    const ValueList& as_list(const Value& v, std::string_view name) const;
    DynModel model(const Value& v, std::string_view name) const;
    Schedule schedule(const Value& v, std::string_view name) const;

    const Section* section_;
    std::string path_;
    std::string ref_;                 // the registered name ("Relu.v1"), for messages
    std::vector<std::string> asked_;  // every name a get asked for (for E312's suggestion)
    std::vector<std::string> used_;   // the keys read
};

// One registry: the names of one kind of reference (@layers, @architectures) and their
// factories. The built-in names are there from the first call to layers() / architectures().
class Registry {
public:
    explicit Registry(std::string kind) : kind_(std::move(kind)) {}
    // Registers a factory under a name (tenon-E319 when the name is taken).
    void add(const std::string& name, Factory factory);
    // A factory that returns a model: `[](Args& a) { return Relu<>({.nO = a.dim("nO")}); }`.
    template <class F>
        requires(std::is_invocable_v<F&, Args&> && !std::is_same_v<std::remove_cvref_t<F>, Factory>)
    void add(const std::string& name, F f) {
        add(name, Factory([f = std::move(f)](Args& a) -> DynModel { return DynModel(f(a)); }));
    }
    bool has(std::string_view name) const;
    std::vector<std::string> names() const;
    // The factory of a name; tenon-E310 with the nearest registered names when there is none.
    const Factory& get(std::string_view name, std::string_view where) const;
    const std::string& kind() const noexcept { return kind_; }

private:
    std::string kind_;
    std::map<std::string, Factory, std::less<>> factories_;
};

// The registries of `@layers = "..."` and `@architectures = "..."`.
Registry& layers();
Registry& architectures();

// A schedule (optim/schedules.hpp) from a config value: a number (constant.v1), or a section
// with `@schedules` and Thinc's arguments: constant.v1 (rate), constant_then.v1 (rate, steps,
// schedule), decaying.v1 (base_rate, decay, t), compounding.v1 (start, stop, compound),
// slanted_triangular.v1 (max_rate, num_steps, cut_frac, ratio), warmup_linear.v1
// (initial_rate, warmup_steps, total_steps), cyclic_triangular.v1 (min_lr, max_lr, period).
// Errors name the path: E310 (an unknown name, with the nearest), E311 ... E314, E317.
Schedule build_schedule(const Value& v, const std::string& path);
std::vector<std::string> schedule_names();

// Builds the model a section describes (its @layers / @architectures reference and its
// arguments, sub-models first). `path` is the section's dotted path, for messages.
DynModel build(const Value& section, const std::string& path);
// The model at `path` in the config ("model" by default).
DynModel build(const Config& config, std::string_view path = "model");

// `tenon codegen`: a C++ header that defines `make_model()`, which returns the static tenon
// model the config's section at `path` builds (every width the config gives is a template
// argument; Thinc's option values as the factories read them), and `using Model =
// decltype(make_model())`, in namespace `ns`. Its model file is the file of the config-built
// model (a file records what a model computes, not how it is held: io/serialize.hpp), so it
// loads what `tenon train` wrote. tenon-E328 for a model a factory gave no code for, or one of
// several signatures (a with_array.v1 alone: put it in a chain that fixes its input type).
std::string codegen(const Config& config, std::string_view path = "model", const std::string& ns = "tenon_model",
                    const std::string& source = {});
// The same as an AnyModel<In, Out> (tenon-E316 when the config's model has other data types).
template <class In, class Out>
AnyModel<In, Out> build_model(const Config& config, std::string_view path = "model") {
    return build(config, path).template take<In, Out>();
}

}  // namespace tenon::config

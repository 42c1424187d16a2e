// Model files: a model's architecture and weights as bytes (docs/serialization.md has the
// format and the versioning policy). A file is an envelope that tenon owns (magic bytes, the
// format version, the kind of content, its length and a CRC-32) around a body that cereal
// encodes in fixed-width little-endian types: the architecture (every node in walk order with
// its name, dims, attributes, parameter shapes and references), then the parameters' values.
//
//   model.to_disk("model.tenon");                 // or auto bytes = model.to_bytes();
//   auto fresh = make_model();                     // the same type, nothing initialised
//   fresh.from_disk("model.tenon");                // dims, attributes and weights from the file
//
// Loading needs no sample data and draws no random numbers. A load that fails throws
// LoadError (what differs, the node's path) and leaves the model exactly as it was.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tenon/io/state.hpp"
#include "tenon/model/node.hpp"
#include "tenon/optim/optimizer.hpp"

namespace tenon {

// The format this build writes; it reads every version up to this one (docs/serialization.md,
// "Versioning policy"). 3: the optimizer state's entries name their nodes, in the model file's
// view of the tree (a state loaded into another architecture is refused); 2: the optimizer
// state (and so a checkpoint) holds Optimizer::skipped_steps; 1: the first, without it (loads as 0).
inline constexpr std::uint32_t model_file_version = 3;

// A model's file, as model.to_bytes() / from_bytes() / can_from_bytes().
std::vector<std::uint8_t> to_bytes(const Node& model);
void from_bytes(Node& model, std::span<const std::uint8_t> data);
// "" when the bytes would load into the model, else the LoadError's message (nothing changes).
std::string can_from_bytes(const Node& model, std::span<const std::uint8_t> data);
// The file's content without a model to load it into (throws LoadError when it is not a
// well-formed model file): for tools that inspect files.
ModelState decode_model(std::span<const std::uint8_t> data);

// The optimizer's state for the parameters of one model (step counts, moments, moving
// averages; its hyperparameters too), keyed by the nodes' places in the model rather than
// their ids, so that it loads into a fresh process's model of the same type.
std::vector<std::uint8_t> optimizer_to_bytes(const Optimizer& optimizer, const Node& model);
void optimizer_from_bytes(Optimizer& optimizer, const Node& model, std::span<const std::uint8_t> data);

// A training checkpoint: the model, the optimizer's state and the random generator that
// dropout and shuffling draw from (global_rng()), so that training resumed from it goes on
// bit for bit as the uninterrupted run would. Loading is all or nothing, as for a model.
std::vector<std::uint8_t> checkpoint_to_bytes(const Node& model, const Optimizer& optimizer);
void checkpoint_from_bytes(Node& model, Optimizer& optimizer, std::span<const std::uint8_t> data);

// Whole files (LoadError tenon-E208 when one cannot be read or written).
std::vector<std::uint8_t> read_file(const std::string& path);
void write_file(const std::string& path, std::span<const std::uint8_t> data);

}  // namespace tenon

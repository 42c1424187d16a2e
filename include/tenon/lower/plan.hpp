// The run-time half of lowering (see docs/lowering.md): a plan is a list of stages over
// "boundaries" (the arrays between stages), each stage a primary step (a matrix product, a
// maxout product, an unfused layer, or nothing) followed by ONE row-by-row pass of fused
// operations (bias and activation, layer norm, dropout, residual add). Everything a call
// needs besides the parameters lives in one workspace array laid out here; the model keeps
// the parameters and gradients. Nothing in this file depends on the model's type: the typed
// part (include/tenon/lower/lower.hpp) only builds a PlanData and supplies function pointers
// for the unfused layers. The functions declared here are compiled once, in src/plan.cpp;
// the row passes and the products run on the model's backend (backend/ops.hpp).
#pragma once
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tenon/backend/ops.hpp"
#include "tenon/layers/dropout.hpp"
#include "tenon/layers/layernorm.hpp"
#include "tenon/layers/sigmoid.hpp"
#include "tenon/lower/lowered_as.hpp"
#include "tenon/model/node.hpp"
#include "tenon/random.hpp"
#include "tenon/types/padded.hpp"

namespace tenon::lowering {

inline constexpr std::size_t npos = static_cast<std::size_t>(-1);
// At most this many fused operations per stage: their parameters are resolved once per call
// into a fixed array on the stack (no allocation); a longer run starts a new stage.
inline constexpr std::size_t max_ops = 8;
// A forward row pass over at least this many values is split over the threads.
inline constexpr std::size_t row_pass_split_work = 8192;

// dense, maxout: a matrix product; layer: an unfused layer's own code; the sequence stages
// (docs/lowering.md, "Sequence models"): table (an embedding table's gather: Embed,
// HashEmbed), window (expand_window's seq2col), concat (concatenate's columns), pad / unpad
// (with_array's zero rows between the sequences, Thinc's flatten / unflatten with pad), reduce
// (a reduction over each sequence's rows: one row per sequence), seq (a layer over the
// sequences' rows that runs its own code with its scratch in the workspace: LSTM,
// ParametricAttention; lowered_as.hpp's SeqLayerStage).
enum class Prim : std::uint8_t { none, dense, maxout, layer, table, window, concat, pad, unpad, reduce, seq, reverse };

// The row spaces of a plan: each boundary's rows are those of one space. Space 0 is the
// input's rows (a batch, or every sequence's rows back to back); a padded space is space 0's
// rows with `pad` zero rows before, between and after the non-empty sequences (with_array's
// pad); the docs space has one row per sequence (after a reduction); the steps space is a
// Padded's (T, B) rows, time-major, its padding rows included (with_array over a Padded runs
// its layer on all of them, as Thinc's with_array2d does): T the longest sequence, B the
// sequences, column b the b-th longest (to_padded's order). The last index
// (max_spaces) is no space but the largest of them: scratch shared by stages of every space
// is sized by it.
inline constexpr std::size_t max_spaces = 4;
constexpr bool is_seq_prim(Prim p) noexcept { return p >= Prim::table; }
struct Space {
    std::size_t pad = 0;
    bool docs = false;   // one row per sequence
    bool steps = false;  // a Padded's steps x sequences rows
};

// The keys of an embedding table's rows for each input row (the layer's own code: Embed's
// range check, HashEmbed's MurmurHash), from the ids (rows x cols, int32).
using TableKeysFn = void (*)(const Node* layer, const std::int32_t* ids, std::size_t rows, std::size_t cols,
                             std::uint32_t* keys);

// One fused operation of a stage's row pass.
struct Op {
    OpKind kind{};
    Node* node = nullptr;              // the LayerNorm, Dropout or sigmoid_activation
    const Dropout* drop = nullptr;
    std::size_t iG = npos, ib = npos;  // layernorm: the indices of its parameters G and b in the node
    std::size_t skip = npos;           // add: the boundary whose rows are added
    std::size_t save = npos;           // buffer: LN's Xhat, dropout's mask, sigmoid's output
    std::size_t rstd = npos;           // buffer: LN's 1/std per row
    bool grad_assign = false;          // add: first write of the skip boundary's gradient (= not +=)
};

// An unfused layer (a "layer" stage): X points at the view the layer takes; bp at its
// Backprop inside the plan's Backprop storage (or the call's box area); dX at the In (head)
// or Floats2d to fill. make_box / drop_box construct and destroy a Backprop in place (a
// stage inside clone's copies: LayerBoxes).
struct LayerFns {
    void (*predict)(const Node* layer, const void* X, Floats2d& Y) = nullptr;
    void (*forward)(Node* layer, const void* X, void* bp, Floats2d& Y) = nullptr;
    void (*backward)(const void* bp, Floats2dCView dY, void* dX) = nullptr;
    void (*make_box)(void* at) = nullptr;
    void (*drop_box)(void* at) noexcept = nullptr;
};
// A boxed Backprop's record in the box area: a header (the record's size, the payload's
// offset in it, its destructor) and the payload, each record a multiple of 64 bytes (the
// area's alignment, array_alignment), so any Backprop of alignment <= 64 fits.
inline constexpr std::size_t box_header_bytes = 32;
constexpr std::size_t box_payload_offset(std::size_t align) { return align <= box_header_bytes ? box_header_bytes : 64; }
constexpr std::size_t box_record_bytes(std::size_t size, std::size_t align) {
    return (box_payload_offset(align) + size + 63) / 64 * 64;
}

struct Stage {
    Prim prim = Prim::none;
    Node* layer = nullptr;
    std::string name;                  // the activation / layer name, for describe
    std::size_t in = 0, out = 0;       // boundaries
    std::size_t nI = 0, nO = 0, nP = 1;
    Activation act = Activation::identity;  // a dense stage's (backend/functors.hpp)
    // A dense / maxout stage's parameters W and b (a table's E in iW) by index in the layer's
    // node, and a softmax's attributes by index (checked by name at each call: a set_attr may
    // add some): looked up once when the plan is made, not by name at every call (finalize).
    std::size_t iW = npos, ib = npos, itemp = npos, inorm = npos;
    bool softmax = false;                   // then a softmax over the row (Softmax's)
    bool act_needs_y = false, act_needs_z = false;
    std::size_t ysave = npos, zsave = npos, which = npos;  // buffers
    bool head = false;                 // a layer stage whose input is the plan's (non-Floats2d) input
    LayerFns fns;
    std::size_t bp_offset = 0;         // of the layer's Backprop in the plan's Backprop storage
    // A layer stage inside clone's copies (whose Backprops clone keeps in a list made per
    // call, no place the plan can name): its Backprop's record in the call's box area
    // (CallState::boxes), made at each training forward; npos elsewhere.
    std::size_t box = npos, box_bytes = 0, box_payload = 0;
    bool dx_assign = true;             // first write of the input boundary's gradient (= not +=)
    std::vector<Op> ops;
    // The sequence stages' data.
    std::size_t space = 0;             // the space of the output's rows (pad: the padded one)
    std::size_t per = 1;               // table: the rows of E summed per output row (HashEmbed: 4)
    TableKeysFn table_keys = nullptr;
    std::size_t keys = npos, mask = npos;  // table: buffers of the keys (uint32) and the column mask
    std::size_t window = 0;            // window: rows on each side
    bool window_segments = false;      // window: within each sequence (expand_window<Ragged>), else all rows
    std::vector<std::size_t> parts;    // concat: the boundaries whose columns it joins
    std::vector<char> part_assign;     // concat: first write of each part's gradient
    bool sum = false;                  // concat: the parts summed (add), not side by side
    Reduce red = Reduce::sum;          // reduce: what (fn::segment_reduce_one); `which` holds max's rows
    const char* why = nullptr;         // reduce: why a sequence needs a row (first, last, max), else null
    std::size_t rscratch = npos;       // reduce: the input's gradient when another stage wrote it first
    const SeqLayerStage* seq = nullptr;  // seq: the layer's functions (parts: its keys' boundary, if any)
    std::size_t sscratch = npos, strain = npos;  // seq: its scratch (predict and training) and training's rest
};

struct Boundary {
    std::size_t width = 0;
    std::size_t space = 0;             // whose rows (Space)
    bool ints = false;                 // int32 ids (a sequence plan's input for a table), not floats
    std::size_t act = npos;            // workspace buffer of the activation (npos: outside it)
    std::size_t grad = npos;           // workspace buffer of its gradient (npos: outside it)
    bool read_back = false;            // the backward pass reads this activation
};

// A region of the workspace: rows * per_row + fixed floats (per_row 0 with fixed > 0: one
// row of scratch), the rows those of its space. Offsets are the sum over the spaces of
// r16 * pre_row + pre_fixed, r16 a space's rows rounded up to 16, so every region starts
// 64-byte aligned and an offset costs a few multiplies per call.
struct Buffer {
    std::string what;
    std::size_t per_row = 0, fixed = 0;
    bool in_predict = false;
    std::size_t space = 0;             // 0 .. max_spaces - 1, or max_spaces: the largest
    std::size_t stage = npos;          // the stage it belongs to (npos: shared; error messages)
    std::size_t pre_row[2][max_spaces + 1] = {}, pre_fixed[2] = {0, 0};  // [0] predict, [1] training
};

struct PlanData {
    // (Special members out of line, src/plan.cpp: compiled once, not in every model's file.)
    PlanData();
    ~PlanData();
    PlanData(const PlanData&);
    PlanData(PlanData&&) noexcept;
    PlanData& operator=(const PlanData&);
    PlanData& operator=(PlanData&&) noexcept;

    std::string model_name;
    std::vector<Stage> stages;
    std::vector<Boundary> bounds;
    std::vector<Buffer> bufs;
    std::vector<Space> spaces{Space{}};
    std::size_t total_row[2][max_spaces + 1] = {}, total_fixed[2] = {0, 0};
    std::size_t dz = npos, zs = npos, tmp = npos;  // scratch: dZ of a stage, maxout's Z, one row
    bool final_in_ws = false;                     // training keeps the output in the workspace
    // A sequence plan (input List / Ragged): the input, the output's gradient and the input's
    // gradient are flattened into the workspace (space 0's rows).
    bool seq = false;
    std::size_t in_buf = npos, dy_buf = npos, dx_buf = npos;
    std::size_t box_bytes = 0;  // the call's box area for the boxed layer stages (Stage::box); 0: none

    std::size_t add_buffer(std::string what, std::size_t per_row, std::size_t fixed, bool in_predict,
                           std::size_t space = 0, std::size_t stage = npos) {
        Buffer b;
        b.what = std::move(what);
        b.stage = stage;
        b.per_row = per_row;
        b.fixed = fixed;
        b.in_predict = in_predict;
        b.space = space;
        bufs.push_back(std::move(b));
        return bufs.size() - 1;
    }
    void layout() {
        for (int t = 0; t < 2; ++t) {
            std::size_t row[max_spaces + 1] = {}, fixed = 0;
            for (auto& b : bufs) {
                if (t == 0 && !b.in_predict) continue;
                for (std::size_t k = 0; k <= max_spaces; ++k) b.pre_row[t][k] = row[k];
                b.pre_fixed[t] = fixed;
                row[b.space] += b.per_row;
                fixed += (b.fixed + 15) / 16 * 16;
            }
            for (std::size_t k = 0; k <= max_spaces; ++k) total_row[t][k] = row[k];
            total_fixed[t] = fixed;
        }
    }
    static std::size_t r16(std::size_t rows) { return (rows + 15) / 16 * 16; }
    // rows + (nonempty + 1) * pad, SIZE_MAX where that overflows (ws_floats then refuses it).
    static std::size_t padded_rows(std::size_t rows, std::size_t nonempty, std::size_t pad) {
        std::size_t r = 0;
        if (__builtin_mul_overflow(nonempty + 1, pad, &r) || __builtin_add_overflow(r, rows, &r)) return SIZE_MAX;
        return r;
    }
    // The rows of each space (and the largest, at max_spaces) for a call whose input has
    // `rows` rows in `nseg` sequences of which `nonempty` have rows, the longest `longest`.
    void space_rows(std::size_t rows, std::size_t nonempty, std::size_t nseg, std::size_t out[max_spaces + 1],
                    std::size_t longest = 0) const {
        out[max_spaces] = 0;
        std::size_t tb = 0;
        if (__builtin_mul_overflow(longest, nseg, &tb)) tb = SIZE_MAX;
        for (std::size_t k = 0; k < max_spaces; ++k) {
            out[k] = k >= spaces.size()          ? 0
                     : spaces[k].docs            ? nseg
                     : spaces[k].steps           ? tb
                     : spaces[k].pad && nonempty ? padded_rows(rows, nonempty, spaces[k].pad)
                                                 : rows;
            out[max_spaces] = out[k] > out[max_spaces] ? out[k] : out[max_spaces];
        }
    }
    // (Saturating: a size that overflows is SIZE_MAX, which the workspace's array refuses,
    // tenon-E240, rather than a short buffer.)
    std::size_t ws_floats(const std::size_t rows[max_spaces + 1], bool train) const {
        std::size_t n = total_fixed[train];
        for (std::size_t k = 0; k <= max_spaces; ++k) {
            std::size_t part = 0;
            if (rows[k] > SIZE_MAX - 15 || __builtin_mul_overflow(r16(rows[k]), total_row[train][k], &part) ||
                __builtin_add_overflow(n, part, &n))
                return SIZE_MAX;
        }
        return n;
    }
    std::size_t ws_floats(std::size_t rows, bool train) const {
        std::size_t r[max_spaces + 1];
        space_rows(rows, 0, rows, r);
        return ws_floats(r, train);
    }
};

class FrozenWeights;

// Where a call's arrays are.
struct Ctx {
    const PlanData* p = nullptr;
    const Ops* ops = nullptr;    // the model's backend: products and row passes run there
    const FrozenWeights* frozen = nullptr;  // a frozen plan's copies of its weights (predict only)
    float* ws = nullptr;
    std::size_t rows = 0, r16 = 0;  // the rows of the stage that runs (its space's)
    std::size_t srows[max_spaces + 1] = {}, sr16[max_spaces + 1] = {};  // each space's
    const std::int32_t* lengths = nullptr;  // a sequence plan's: the input's sequences
    std::size_t nseg = 0;
    std::size_t in_cols = 0;                // ... and the columns of its ids
    bool train = false;
    const float* x0 = nullptr;   // boundary 0 (the input), when it is a Floats2d
    float* b1 = nullptr;         // boundary 1 when a head layer made it (its own array)
    float* y = nullptr;          // the output array (the last boundary, unless it is in the workspace)
    float* dx0 = nullptr;        // the gradient of boundary 0 (the dX array returned)
    const float* dy = nullptr;   // the gradient of the last boundary (the caller's dY)
    // Training: seq_host_words host words per stage (CallState's), kept from forward to backward
    // (lowered_as.hpp's SeqCall::host; a table's mask flag). Null in predict.
    std::uint64_t* host = nullptr;
    char* boxes = nullptr;       // training: the call's box area (Stage::box)

    // Where a layer stage's Backprop is: its box, else its place in the Backprop storage.
    char* layer_bp(const Stage& s, char* root) const {
        return s.box != npos ? boxes + s.box + s.box_payload : root + s.bp_offset;
    }

    float* buf(std::size_t id) const {
        const Buffer& b = p->bufs[id];
        std::size_t off = b.pre_fixed[train];
        for (std::size_t k = 0; k <= max_spaces; ++k) off += sr16[k] * b.pre_row[train][k];
        return ws + off;
    }
    void set_rows(const std::size_t r[max_spaces + 1]) {
        for (std::size_t k = 0; k <= max_spaces; ++k) {
            srows[k] = r[k];
            sr16[k] = PlanData::r16(r[k]);
        }
        rows = srows[0];
        r16 = sr16[0];
    }
    // The rows of a stage's output space (the row passes and products read c.rows).
    void at(std::size_t space) {
        rows = srows[space];
        r16 = sr16[space];
    }
    float* act(std::size_t i) const {
        const Boundary& b = p->bounds[i];
        if (i == 0) return const_cast<float*>(x0);  // read only: stages never write their input
        if (b1 && i == 1) return b1;
        if (i + 1 == p->bounds.size() && !(train && p->final_in_ws)) return y;
        return buf(b.act);
    }
    float* grad(std::size_t i) const {
        if (i == 0) return dx0;
        if (i + 1 == p->bounds.size()) return const_cast<float*>(dy);  // read only
        return buf(p->bounds[i].grad);
    }
};

// A Padded's (T, B, n) data in to_padded's layout (T the longest of the call's sequences,
// column b the b-th longest, ties the later sequence first) and the sequences' rows back to
// back (src/plan.cpp). steps_to_rows gathers the rows; rows_to_steps writes them, the padding
// zero (add: adds them, the padding untouched). padded_layout: that layout's size_at_t,
// lengths and indices for the sequences' lengths.
void steps_to_rows(const Ctx& c, const float* steps, std::size_t n, float* rows, bool add);
void rows_to_steps(const Ctx& c, const float* rows, std::size_t n, float* steps, bool add);
void padded_layout(const std::int32_t* lengths, std::size_t nseg, Ints1d& size_at_t, Ints1d& sorted, Ints1d& indices);
// A Padded input the plan takes: to_padded's layout (else why not, as text); check_padded_input
// throws that (tenon-E101).
const char* padded_off_plan(const Padded& X);
void check_padded_input(const PlanData& p, const Padded& X);

// Where a stage's backward pass leaves the gradient of its product's output (dense,
// maxout) or of its layer's output (layer stage with fused operations): in place over the
// gradient of its output when that is the workspace's and as wide (no copy), else scratch.
inline float* dz_of(const Stage& s, const Ctx& c) {
    if (s.prim != Prim::maxout && s.out + 1 != c.p->bounds.size()) return c.buf(c.p->bounds[s.out].grad);
    return c.buf(c.p->dz);
}

// Parameters of a stage, looked up once per call (by index into the node: a plan never holds
// pointers into the model, which may reallocate them).
struct OpParams {
    const float* G = nullptr;
    const float* b = nullptr;
    float* dG = nullptr;
    float* db = nullptr;
    float keep = 1.0f, threshold = 0.0f;
    bool on = false, all = false;  // dropout: drawing a mask; the rate is 1
};
struct StageParams {
    const float* W = nullptr;
    const float* Wp = nullptr;  // W packed for the backend's product (a frozen plan's), or null
    const float* b = nullptr;
    float* dW = nullptr;
    float* db = nullptr;
    float dW_beta = 1.0f;  // 0 when dW is a lazy zero (Node::get_grad_for_overwrite): the product writes it
    float t = 1.0f, k = 1.0f;
    bool normalize = true;
    // The product's epilogue took the stage's bias and activation (product_forward, set by the
    // run before the row pass): the backend's stage_forward_rows skips them.
    bool bias_act_done = false;
    OpParams op[max_ops];
};

// `grads`: for the backward pass (the forward pass must not touch the gradients: taking dW
// for overwriting clears its lazy-zero mark).
StageParams resolve(const Stage& s, bool train, bool grads = false);

// A plan's frozen weights (Plan::freeze_weights; docs/lowering.md, "Frozen weights"): copies
// of what its dense and maxout stages read when predicting (W packed for the backend's
// product and as it is, b, a fused LayerNorm's G and b), made in the backend's memory, with
// the value stamps (node.hpp, detail::ValueStamp) of the parameters they were copied from.
// Immutable once made. A backend that does not prepack (Ops::prepacked_size 0) gets no
// copies: its frozen plan reads the model, as an unfrozen one does.
class FrozenWeights {
public:
    // Copies the parameters now, under detail::param_write_mutex().
    FrozenWeights(const PlanData& p, const Ops& ops);
    // Whether the copies are still those of the model's values on this backend: the same Ops,
    // every source's stamp unchanged (a few loads).
    bool current(const Ops& ops) const noexcept;
    // Points sp at the copies of stage i (where it has some).
    void apply(std::size_t stage, StageParams& sp) const noexcept;
    // The values copied (for tests and describe).
    std::size_t floats() const noexcept { return floats_; }

private:
    struct Copy {
        const float* W = nullptr;
        const float* Wp = nullptr;
        const float* b = nullptr;
        const float* G[max_ops] = {};
        const float* gb[max_ops] = {};
    };
    struct Source {
        const Node* node;
        std::size_t index;
        std::uint64_t stamp;
    };
    const Ops* ops_;
    std::vector<Copy> stages_;  // one per stage of the plan (null pointers: none)
    std::vector<Source> sources_;
    std::vector<Floats1d> store_;
    std::size_t floats_ = 0;
};

// A plan's frozen state: off, or on with the current copies, made again (under a lock; the
// old copies stay alive while a call still reads them) when the model's values moved.
class FrozenSlot {
public:
    // (Out of line, src/plan.cpp: not compiled again in each model's file.) A copy shares
    // the copies (they are immutable).
    FrozenSlot();
    ~FrozenSlot();
    FrozenSlot(const FrozenSlot& o);
    FrozenSlot& operator=(const FrozenSlot& o);
    bool on() const noexcept { return on_.load(std::memory_order_acquire); }
    // On (copies made now) or off (copies released).
    void freeze(const PlanData& p, const Ops& ops);
    void thaw() noexcept;
    // The copies for a call: the current ones, or new ones when a stamp or the backend moved.
    std::shared_ptr<const FrozenWeights> get(const PlanData& p, const Ops& ops) const;

private:
    std::atomic<bool> on_{false};
    mutable std::atomic<std::shared_ptr<const FrozenWeights>> cur_;
    mutable tenon::detail::Mutex lock_;
};

// The row passes of a stage (the fused operations after its primary step, forward and
// backward) are the backend's: Ops::stage_forward_rows / stage_backward_rows (the CPU's in
// src/cpu/ops.cpp). Their contract: the forward pass writes the stage's output rows from what
// its primary step left (dense: the product, maxout: the pieces' Z scratch, none: the input);
// a dropout draws one key per call from global_rng(), in op order as the layers do, and
// element j of its mask is a function of the key and j (dropout_mask, random.hpp), so rows
// may be split over threads with the same result. The backward pass takes dY through the
// fused operations in reverse and the activation into dZ (dense, layer), maxout's dZ over the
// pieces, or straight into the input's gradient (none), adding to b's and LN's gradients.

// Forward of a product stage: the matrix product into O (maxout: into its Z scratch). A dense
// stage whose row pass starts with no more than its bias and activation asks the backend for
// them in the product's epilogue (Ops::gemm_bias_act); returns whether the backend took them
// (the run keeps it in StageParams::bias_act_done, and the backend's stage_forward_rows then
// skips them and runs what follows them).
bool product_forward(const Stage& s, const StageParams& sp, const Ctx& c);
// Whether a dense stage's bias and activation may go into the product's epilogue: no softmax
// after them, a bias, and no pre-activation to keep for the backward pass.
inline bool bias_act_epilogue(const Stage& s, const StageParams& sp, const Ctx& c) noexcept {
    return s.prim == Prim::dense && !s.softmax && sp.b != nullptr && !(c.train && s.zsave != npos);
}
// Backward of a product stage, after its row pass left dZ in the scratch: dW += dZ^T X (=
// where dW is a lazy zero) and
// dX = dZ W (+= where the input's gradient already holds a residual's skip part).
void product_backward(const Stage& s, const StageParams& sp, const Ctx& c);

// The sequence stages (table, window, concat, pad, unpad, reduce): forward writes the stage's
// output from its input(s); backward takes the output's gradient d (after the stage's row
// pass) into the parameters' gradients (table) or the inputs' gradients (the others). The
// context's rows must be the stage's (Ctx::at). Their math is the layers' own
// (Embed/HashEmbed's keys by the layer's function, expand_window's Ops::seq2col, Thinc's
// flatten with pad, the reductions' Ops::segment_reduce).
// n floats from `from` to `to`, both in the backend's memory (a plan's boundaries: its input,
// output and gradients in and out of the workspace), on the backend.
inline void copy_floats(const Ops& ops, float* to, const float* from, std::size_t n) {
    if (n) ops.copy_rows(from, n, to, n, 1, n, false);
}
void seq_forward(const Stage& s, const Ctx& c);
void seq_backward(const Stage& s, const Ctx& c, const float* d);

std::string fmt_rate(double r);

// "stage 0: gemm 784->512 | bias, relu, dropout(0.2)", one line per stage.
std::string describe_stages(const PlanData& p);

// The workspace for a batch size, training and prediction: each region's offset and size.
std::string describe_layout(const PlanData& p, std::size_t rows);
// A call's workspace could not be allocated (e, tenon-E241): the message gains the workspace's
// size for `rows` and its largest part, and the error names that part's layer.
void note_workspace_error(Error& e, const PlanData& p, std::size_t rows, bool train);

// After the walk (lower.hpp): which arrays the backward pass reads, the workspace regions,
// and which stage writes each gradient first.
void finalize(PlanData& p);
// Whether two plans of one model run the same stages over the same widths and nodes (a plan
// made before a change of the model against one made after it). `why`: the first difference.
bool same_layout(const PlanData& a, const PlanData& b, std::string& why);

// The walk's state while lower() builds a plan (lower.hpp walks the types and calls these).
struct Builder {
    PlanData& p;
    const char* bp_root;      // a default Backprop of the model: slots are found by offset
    std::size_t cur = 0;      // the boundary the next layer reads
    bool pinned = true;       // cur must stay a boundary (nothing merges into the stage that made it)

    std::size_t width() const { return p.bounds[cur].width; }
    // The type-independent steps of the walk, compiled once in the library (src/plan.cpp).
    void expect_width(const Node& l, std::size_t nI);
    // A new stage reading the current boundary and writing a new one of width nO.
    Stage& open(Prim prim, std::size_t nI, std::size_t nO);
    // An elementwise operation: into the current stage's pass where it may go, else a new
    // "elementwise" stage. Any number of dropouts may share a pass: each draws its key when
    // the pass starts, in the order the layers draw theirs (dropout_mask, random.hpp).
    void add_op(Op op);
    // A dense layer's optional LayerNorm and Dropout (its children, in that order).
    void add_tail(Node& layer);
    // A Padded's rows: on the steps space (its (T, B) rows, padding included) or the
    // sequences' own (space 0, the padding zero where the plan has none). to_steps: a "pad"
    // stage into the steps space (zero padding: exact for a Padded of the sequences' rows,
    // whose padding is zero); to_rows: an "unpad" stage back (drops the padding rows: for
    // the layers that never read them). Both refuse (tenon-E170, naming `layer`) where the
    // rows are neither.
    bool on_steps() const { return p.spaces[p.bounds[cur].space].steps; }
    void to_steps(const Node& layer);
    void to_rows(const Node& layer);
    const void* slot_offset_base() const { return bp_root; }
};

}  // namespace tenon::lowering

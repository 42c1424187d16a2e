// A plan's stage for the device backend (g++ side: the plan's headers never reach nvcc): the
// stage, its parameters and the call's context resolved to the POD RowPass, as the CPU
// backend's stage_forward_rows / stage_backward_rows (src/cpu/ops.cpp) resolve them, dropout's
// keys drawn in op order from global_rng() as there. Included once per build, after
// device_ops.hpp.
#include <bit>
#include <cstring>

#include "tenon/lower/plan.hpp"
#include "tenon/random.hpp"

namespace tenon::TENON_DEVICE_NS {
namespace {
using namespace lowering;

static_assert(max_ops == max_row_ops);
static_assert(int(OpKind::layernorm) == int(RowOpKind::layernorm) && int(OpKind::dropout) == int(RowOpKind::dropout) &&
              int(OpKind::sigmoid) == int(RowOpKind::sigmoid) && int(OpKind::add) == int(RowOpKind::add));

RowPrim row_prim(Prim p) {
    switch (p) {
        case Prim::none: return RowPrim::none;
        case Prim::dense: return RowPrim::dense;
        case Prim::maxout: return RowPrim::maxout;
        default: return RowPrim::other;  // a layer or a sequence stage: its output is already there
    }
}

RowPass common(const Stage& s, const StageParams& sp, const Ctx& c) {
    RowPass p;
    p.prim = row_prim(s.prim);
    p.act = s.act;
    p.softmax = s.softmax;
    p.normalize = sp.normalize;
    p.act_needs_y = s.act_needs_y;
    p.train = c.train;
    p.dx_assign = s.dx_assign;
    p.k = sp.k;
    p.n = s.nO;
    p.nP = s.nP;
    p.rows = c.rows;
    p.O = c.act(s.out);
    p.b = sp.b;
    p.db = sp.db;
    p.nops = s.ops.size();
    for (std::size_t k = 0; k < p.nops; ++k) {
        const Op& op = s.ops[k];
        const OpParams& pp = sp.op[k];
        RowOp& r = p.ops[k];
        r.kind = static_cast<RowOpKind>(op.kind);
        r.grad_assign = op.grad_assign;
        r.G = pp.G;
        r.b = pp.b;
        r.dG = pp.dG;
        r.db = pp.db;
        r.on = pp.on;
        r.all = pp.all;
        r.kt = dropout_threshold(pp.threshold);
        r.kb = std::bit_cast<std::uint32_t>(pp.keep);
    }
    return p;
}
}  // namespace

void DeviceOps::stage_forward_rows(const Stage& s, const StageParams& sp, const Ctx& c) const {
    TENON_DEVICE_ENTRY;
    RowPass p = common(s, sp, c);
    // The product took the bias and activation into its epilogue (product_forward, gemm_bias_act).
    p.bias_done = sp.bias_act_done;
    p.in = s.prim == Prim::none ? c.act(s.in) : nullptr;
    p.zs = s.prim == Prim::maxout ? c.buf(c.p->zs) : nullptr;
    p.ysave = c.train && s.ysave != npos ? c.buf(s.ysave) : nullptr;
    p.zsave = c.train && s.zsave != npos ? c.buf(s.zsave) : nullptr;
    p.which = c.train && s.which != npos ? reinterpret_cast<std::int32_t*>(c.buf(s.which)) : nullptr;
    for (std::size_t k = 0; k < p.nops; ++k) {
        const Op& op = s.ops[k];
        RowOp& r = p.ops[k];
        r.save = c.train && op.save != npos ? c.buf(op.save) : nullptr;
        r.rstd = c.train && op.rstd != npos ? c.buf(op.rstd) : nullptr;
        r.skip = op.kind == OpKind::add ? c.act(op.skip) : nullptr;
    }
    for (std::size_t k = 0; k < p.nops; ++k)  // one key per call, in op order (as the CPU's)
        if (s.ops[k].kind == OpKind::dropout && c.train && sp.op[k].on && !sp.op[k].all)
            p.ops[k].key = dropout_key(global_rng());
    rows_forward(p);
}

void DeviceOps::stage_backward_rows(const Stage& s, const StageParams& sp, const Ctx& c) const {
    TENON_DEVICE_ENTRY;
    RowPass p = common(s, sp, c);
    p.dY = c.grad(s.out);
    p.ysave = s.ysave != npos ? c.buf(s.ysave) : nullptr;
    p.zsave = s.zsave != npos ? c.buf(s.zsave) : nullptr;
    p.which = s.which != npos ? reinterpret_cast<std::int32_t*>(c.buf(s.which)) : nullptr;
    p.dz = s.prim == Prim::none ? nullptr : dz_of(s, c);
    p.gin = s.prim == Prim::none ? c.grad(s.in) : nullptr;
    for (std::size_t k = 0; k < p.nops; ++k) {
        const Op& op = s.ops[k];
        RowOp& r = p.ops[k];
        r.save = op.save != npos ? c.buf(op.save) : (op.kind == OpKind::sigmoid ? p.O : nullptr);
        r.rstd = op.rstd != npos ? c.buf(op.rstd) : nullptr;
        r.skipg = op.kind == OpKind::add ? c.grad(op.skip) : nullptr;
    }
    rows_backward(p);
}

}  // namespace tenon::TENON_DEVICE_NS

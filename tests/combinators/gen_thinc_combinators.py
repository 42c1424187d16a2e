#!/usr/bin/python3
"""Thinc's combinators (add, concatenate, residual, siamese + CauchySimilarity, and the
computation bidirectional is meant to do) as reference cases for
tests/combinators/test_combinators.cpp: the same weights and inputs in both, forward output,
dX and parameter gradients.

Sequence layers: `rows(Linear)` below is a tiny Thinc layer that applies a Linear to every
row of a Ragged, a Padded ((T, B, N) seen as (T*B, N) rows, padding included) or a list of
arrays; the C++ test has the same layer (RowsLinear). Where Thinc 8.1 is wrong
(/work/shared/reference/thinc-known-defects.md: concatenate's Ragged backward; bidirectional's
_reverse is the identity and its _split gives r2l the first half of dZ) the reference for that
part is computed from Thinc's own layers' forward and backward calls, with the correct
composition written out here.

Usage: /usr/bin/python3 tests/combinators/gen_thinc_combinators.py OUTDIR [--stamp FILE]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import numpy  # noqa: E402
from thinc.api import (  # noqa: E402
    CauchySimilarity,
    Linear,
    Model,
    NumpyOps,
    Relu,
    add,
    concatenate,
    fix_random_seed,
    residual,
    siamese,
)
from thinc.types import Padded, Ragged  # noqa: E402

from oracle_io import CaseWriter, run_main  # noqa: E402

ops = NumpyOps()


def rnd(shape, seed, scale=1.0):
    return (numpy.random.RandomState(seed).uniform(-1, 1, shape) * scale).astype("f")


def set_params(layer, seed):
    for i, name in enumerate(layer.param_names):
        shape = layer.get_param(name).shape
        layer.set_param(name, rnd(shape, seed + i))


def add_params(c, prefix, layer):
    for name in layer.param_names:
        c.add("%s.%s" % (prefix, name), layer.get_param(name))


def add_grads(c, prefix, layer):
    for name in layer.param_names:
        c.add("%s.d%s" % (prefix, name), layer.get_grad(name))


def seqs(lengths, width, seed):
    rng = numpy.random.RandomState(seed)
    return [rng.uniform(-1, 1, (n, width)).astype("f") for n in lengths]


def rows(inner):
    """Applies `inner` (2d -> 2d) to every row of a Ragged, Padded or list of arrays."""

    def forward(model, X, is_train):
        lin = model.layers[0]
        if isinstance(X, Ragged):
            Y, bp = lin(X.dataXd, is_train)
            return Ragged(Y, X.lengths), lambda dY: Ragged(bp(dY.dataXd), dY.lengths)
        if isinstance(X, Padded):
            T, B, N = X.data.shape
            Y, bp = lin(X.data.reshape(T * B, N), is_train)

            def back(dY):
                d = bp(numpy.ascontiguousarray(dY.data.reshape(T * B, -1)))
                return Padded(d.reshape(T, B, N), dY.size_at_t, dY.lengths, dY.indices)

            return Padded(Y.reshape(T, B, -1), X.size_at_t, X.lengths, X.indices), back
        lens = [len(x) for x in X]
        flat = numpy.concatenate(X, axis=0) if X else numpy.zeros((0, lin.get_dim("nI")), "f")
        Y, bp = lin(flat, is_train)
        splits = numpy.cumsum(lens)[:-1]

        def back_list(dY):
            d = bp(numpy.ascontiguousarray(numpy.concatenate(dY, axis=0)))
            return list(numpy.split(d, splits))

        return list(numpy.split(Y, splits)), back_list

    return Model("rows", forward, layers=[inner])


def linear(nO, nI, seed):
    m = Linear(nO, nI)
    m.initialize()
    set_params(m, seed)
    return m


# ---- add ------------------------------------------------------------------------------
def add_f2d():
    # Linear first: Thinc's add sums into the first layer's output array in place
    # (Y += layer_Y), which a first Relu keeps for its backward pass (its mask then comes
    # from the sum): Thinc's dX and the Relu's gradients are wrong with a Relu first.
    c = CaseWriter("add_f2d")
    layers = [Linear(4, 3), Relu(4, 3), Relu(4, 3)]
    model = add(*layers)
    X = rnd((5, 3), 1)
    model.initialize(X=X)
    for i, l in enumerate(layers):
        set_params(l, 10 * i + 10)
        add_params(c, "l%d" % i, l)
    Y, bp = model(X, is_train=True)
    dY = rnd(Y.shape, 2)
    dX = bp(dY)
    c.add("X", X)
    c.add("Y", Y)
    c.add("dY", dY)
    c.add("dX", dX)
    for i, l in enumerate(layers):
        add_grads(c, "l%d" % i, l)
    return c


# ---- concatenate ----------------------------------------------------------------------
def concat_f2d():
    c = CaseWriter("concat_f2d")
    layers = [Relu(4, 3), Linear(2, 3), Relu(3, 3)]
    model = concatenate(*layers)
    X = rnd((5, 3), 3)
    model.initialize(X=X)
    for i, l in enumerate(layers):
        set_params(l, 10 * i + 20)
        add_params(c, "l%d" % i, l)
    Y, bp = model(X, is_train=True)
    assert model.get_dim("nO") == 9
    dY = rnd(Y.shape, 4)
    dX = bp(dY)
    c.add("X", X)
    c.add("Y", Y)
    c.add("dY", dY)
    c.add("dX", dX)
    for i, l in enumerate(layers):
        add_grads(c, "l%d" % i, l)
    return c


def concat_ragged():
    # Thinc's forward is compared as it is; its backward fails on Ragged (a known defect),
    # so dX is the sum of the layers' dX for their slices of dY, computed with their own
    # backprop callbacks.
    c = CaseWriter("concat_ragged")
    lins = [linear(4, 3, 30), linear(2, 3, 40)]
    parts = [rows(lins[0]), rows(lins[1])]
    model = concatenate(*parts)
    xs = seqs([2, 0, 3], 3, 5)
    X = Ragged(numpy.concatenate(xs, axis=0), ops.asarray1i([2, 0, 3]))
    Y, _ = model(X, is_train=False)
    (Y0, bp0), (Y1, bp1) = parts[0](X, True), parts[1](X, True)
    assert numpy.allclose(Y.dataXd, numpy.hstack([Y0.dataXd, Y1.dataXd]))
    dY = Ragged(rnd(Y.dataXd.shape, 6), X.lengths)
    dX = bp0(Ragged(numpy.ascontiguousarray(dY.dataXd[:, :4]), dY.lengths)).dataXd + bp1(
        Ragged(numpy.ascontiguousarray(dY.dataXd[:, 4:]), dY.lengths)
    ).dataXd
    c.add_ragged("X", X)
    c.add_ragged("Y", Y)
    c.add_ragged("dY", dY)
    c.add_ragged("dX", Ragged(dX, X.lengths))
    for i, l in enumerate(lins):
        add_params(c, "l%d" % i, l)
        add_grads(c, "l%d" % i, l)
    return c


# ---- residual -------------------------------------------------------------------------
def residual_f2d():
    c = CaseWriter("residual_f2d")
    inner = Relu(4, 4)
    model = residual(inner)
    X = rnd((5, 4), 7)
    model.initialize(X=X)
    set_params(inner, 50)
    add_params(c, "l0", inner)
    Y, bp = model(X, is_train=True)
    dY = rnd(Y.shape, 8)
    dX = bp(dY)
    c.add("X", X)
    c.add("Y", Y)
    c.add("dY", dY)
    c.add("dX", dX)
    add_grads(c, "l0", inner)
    return c


def residual_seq(kind):
    name = "residual_" + kind
    c = CaseWriter(name)
    lin = linear(3, 3, 60)
    model = residual(rows(lin))
    xs = seqs([3, 0, 2], 3, 9)
    if kind == "ragged":
        X = Ragged(numpy.concatenate(xs, axis=0), ops.asarray1i([3, 0, 2]))
    elif kind == "padded":
        X = ops.list2padded(xs)
    else:
        X = xs
    Y, bp = model(X, is_train=True)
    if kind == "ragged":
        dY = Ragged(rnd(Y.dataXd.shape, 10), Y.lengths)
    elif kind == "padded":
        dY = Padded(rnd(Y.data.shape, 10), Y.size_at_t, Y.lengths, Y.indices)
    else:
        dY = [rnd(y.shape, 10 + i) for i, y in enumerate(Y)]
    dX = bp(dY)
    add_params(c, "l0", lin)
    c.add_value("X", X)
    c.add_value("Y", Y)
    c.add_value("dY", dY)
    c.add_value("dX", dX)
    add_grads(c, "l0", lin)
    return c


# ---- bidirectional --------------------------------------------------------------------
def reverse_in_lengths(p):
    data = p.data.copy()
    for b, n in enumerate(p.lengths):
        data[:n, b] = p.data[:n, b][::-1]
    return Padded(data, p.size_at_t, p.lengths, p.indices)


def bidirectional_case():
    # Thinc 8.1's bidirectional() does not reverse (its _reverse is data[::1]) and gives r2l
    # the first half of dZ; the reference is what it means to compute, from Thinc's layers:
    #   Z = [l2r(X), rev(r2l(rev(X)))],  dX = dX_l2r + rev(dX_r2l(rev(dZ_r2l)))
    c = CaseWriter("bidirectional")
    l2r_lin, r2l_lin = linear(4, 3, 70), linear(4, 3, 80)
    l2r, r2l = rows(l2r_lin), rows(r2l_lin)
    X = ops.list2padded(seqs([2, 4, 0, 3], 3, 11))
    Zl, bl = l2r(X, True)
    Zr_rev, br = r2l(reverse_in_lengths(X), True)
    Zr = reverse_in_lengths(Zr_rev)
    Z = Padded(numpy.concatenate([Zl.data, Zr.data], axis=-1), X.size_at_t, X.lengths, X.indices)
    dZ = Padded(rnd(Z.data.shape, 12), X.size_at_t, X.lengths, X.indices)
    dl = Padded(numpy.ascontiguousarray(dZ.data[..., :4]), X.size_at_t, X.lengths, X.indices)
    dr = reverse_in_lengths(Padded(numpy.ascontiguousarray(dZ.data[..., 4:]), X.size_at_t, X.lengths, X.indices))
    dX = bl(dl).data + reverse_in_lengths(br(dr)).data
    add_params(c, "l2r", l2r_lin)
    add_params(c, "r2l", r2l_lin)
    c.add_padded("X", X)
    c.add_padded("Y", Z)
    c.add_padded("dY", dZ)
    c.add_padded("dX", Padded(dX, X.size_at_t, X.lengths, X.indices))
    add_grads(c, "l2r", l2r_lin)
    add_grads(c, "r2l", r2l_lin)
    return c


# ---- siamese + CauchySimilarity -------------------------------------------------------
def siamese_case():
    c = CaseWriter("siamese")
    layer = Relu(4, 3)
    sim = CauchySimilarity(4)
    model = siamese(layer, sim)
    X1, X2 = rnd((5, 3), 13), rnd((5, 3), 14)
    model.initialize(X=(X1, X2))
    set_params(layer, 90)
    # W starts at 1 (checked in C++); random positive weights test its gradient better.
    assert numpy.all(sim.get_param("W") == 1)
    sim.set_param("W", numpy.abs(rnd((4,), 95)) + 0.5)
    add_params(c, "layer", layer)
    add_params(c, "sim", sim)
    Y, bp = model((X1, X2), is_train=True)
    dY = rnd(Y.shape, 15)
    dX1, dX2 = bp(dY)
    c.add("X1", X1)
    c.add("X2", X2)
    c.add("Y", Y)
    c.add("dY", dY)
    c.add("dX1", dX1)
    c.add("dX2", dX2)
    add_grads(c, "layer", layer)
    add_grads(c, "sim", sim)
    return c


CASES = [
    ("add_f2d", add_f2d),
    ("concat_f2d", concat_f2d),
    ("concat_ragged", concat_ragged),
    ("residual_f2d", residual_f2d),
    ("residual_ragged", lambda: residual_seq("ragged")),
    ("residual_padded", lambda: residual_seq("padded")),
    ("residual_list", lambda: residual_seq("list")),
    ("bidirectional", bidirectional_case),
    ("siamese", siamese_case),
]

if __name__ == "__main__":
    sys.exit(run_main(CASES, sys.argv, fix_random_seed))

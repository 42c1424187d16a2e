#!/usr/bin/python3
"""Reference cases for tenon's LSTM (tests/recurrent/test_lstm.cpp).

Usage:  /usr/bin/python3 tests/recurrent/gen_thinc_lstm.py OUTDIR [--stamp FILE]

Forward: Thinc 8.1's LSTM (thinc/layers/lstm.py, NumpyOps) on the same weights; its
parameter layout is tenon's. Thinc 8.1 uses HC0[0] as the initial *cell* and HC0[1] as the
initial *hidden* (NumpyOps.lstm_forward_training passes H0, C0 to a function that takes
c_init, h_init), the other way round from its own names; tenon follows the names, so Thinc
is given HC0 swapped.

Gradients: Thinc 8.1's LSTM backprop is wrong (its weight and input gradients do not match
finite differences of its own forward: the gates' gradient it multiplies is never filled),
so the gradients come from PyTorch's nn.LSTM (float64) on the same weights, mapped from
Thinc's gate order (forget, input, output, candidate) to PyTorch's (input, forget, cell,
output), when PyTorch is installed (python3-torch; tests/recurrent/meson.build runs the
comparison only then). The cases then hold dX, d.LSTM and d.HC0.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))

import numpy  # noqa: E402
from thinc.api import LSTM, NumpyOps, fix_random_seed  # noqa: E402
from thinc.types import Padded  # noqa: E402

from oracle_io import CaseWriter, run_main  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError:  # the gradient cases need it
    torch = None

# PyTorch's gate blocks, as Thinc's block indices: input = 1, forget = 0, cell = 3, output = 2.
TORCH_FROM_THINC = [1, 0, 3, 2]


def blocks(d_in, nH, depth, dirs):
    """(layer, dir, nI_layer, offsets of Wx, bx, Wh, bh) in the flat parameter."""
    at, nI = 0, d_in
    for i in range(depth):
        for d in range(dirs):
            H4 = 4 * nH
            yield i, d, nI, (at, at + H4 * nI, at + H4 * nI + H4, at + H4 * nI + H4 + H4 * nH)
            at += H4 * nI + H4 + H4 * nH + H4
        nI = dirs * nH


def reorder(a, nH):
    parts = [a[k * nH:(k + 1) * nH] for k in range(4)]
    return numpy.concatenate([parts[k] for k in TORCH_FROM_THINC], axis=0)


def unorder(a, nH):
    parts = [a[k * nH:(k + 1) * nH] for k in range(4)]
    out = [None] * 4
    for torch_k, thinc_k in enumerate(TORCH_FROM_THINC):
        out[thinc_k] = parts[torch_k]
    return numpy.concatenate(out, axis=0)


def torch_gradients(L, HC0, Xp, dY, nI, nO, bi, depth):
    dirs = 2 if bi else 1
    nH = nO // dirs
    rnn = torch.nn.LSTM(nI, nH, depth, bidirectional=bi).double()
    for i, d, nIl, (wx, bx, wh, bh) in blocks(nI, nH, depth, dirs):
        sfx = "_l%d%s" % (i, "_reverse" if d else "")
        H4 = 4 * nH
        with torch.no_grad():
            getattr(rnn, "weight_ih" + sfx).copy_(torch.tensor(reorder(L[wx:wx + H4 * nIl].reshape(H4, nIl), nH)))
            getattr(rnn, "bias_ih" + sfx).copy_(torch.tensor(reorder(L[bx:bx + H4], nH)))
            getattr(rnn, "weight_hh" + sfx).copy_(torch.tensor(reorder(L[wh:wh + H4 * nH].reshape(H4, nH), nH)))
            getattr(rnn, "bias_hh" + sfx).copy_(torch.tensor(reorder(L[bh:bh + H4], nH)))
    T, B = Xp.data.shape[0], Xp.data.shape[1]
    X = torch.tensor(Xp.data.astype("float64"), requires_grad=True)
    h0 = torch.tensor(HC0[0].reshape(depth * dirs, 1, nH).astype("float64"), requires_grad=True)
    c0 = torch.tensor(HC0[1].reshape(depth * dirs, 1, nH).astype("float64"), requires_grad=True)
    packed = torch.nn.utils.rnn.pack_padded_sequence(X, [int(n) for n in Xp.lengths], enforce_sorted=True)
    out, _ = rnn(packed, (h0.expand(-1, B, -1).contiguous(), c0.expand(-1, B, -1).contiguous()))
    Y, _ = torch.nn.utils.rnn.pad_packed_sequence(out, total_length=T)
    (Y * torch.tensor(dY.astype("float64"))).sum().backward()
    dL = numpy.zeros_like(L, dtype="float64")
    for i, d, nIl, (wx, bx, wh, bh) in blocks(nI, nH, depth, dirs):
        sfx = "_l%d%s" % (i, "_reverse" if d else "")
        H4 = 4 * nH
        dL[wx:wx + H4 * nIl] = unorder(getattr(rnn, "weight_ih" + sfx).grad.numpy(), nH).ravel()
        dL[bx:bx + H4] = unorder(getattr(rnn, "bias_ih" + sfx).grad.numpy(), nH)
        dL[wh:wh + H4 * nH] = unorder(getattr(rnn, "weight_hh" + sfx).grad.numpy(), nH).ravel()
        dL[bh:bh + H4] = unorder(getattr(rnn, "bias_hh" + sfx).grad.numpy(), nH)
    dHC0 = numpy.stack([h0.grad.numpy().reshape(depth, dirs, nH), c0.grad.numpy().reshape(depth, dirs, nH)])
    return Y.detach().numpy(), X.grad.numpy(), dL, dHC0


def lstm_case(name, bi, depth, nI, nO, lengths, seed):
    def make():
        rng = numpy.random.RandomState(seed)
        ops = NumpyOps()
        Xs = [rng.uniform(-1, 1, (n, nI)).astype("f") for n in lengths]
        Xp = ops.list2padded(Xs)
        model = LSTM(nO, nI, bi=bi, depth=depth)
        model.initialize(X=Xp)
        L = rng.uniform(-0.5, 0.5, model.get_param("LSTM").shape).astype("f")
        HC0 = rng.uniform(-0.5, 0.5, model.get_param("HC0").shape).astype("f")
        model.set_param("LSTM", L)
        model.set_param("HC0", numpy.ascontiguousarray(HC0[::-1]))  # Thinc's swap (see above)
        Y = model.predict(Xp)
        dY = rng.uniform(-1, 1, Y.data.shape).astype("f")
        for t, n in enumerate(Y.size_at_t):
            dY[t, n:] = 0.0
        c = CaseWriter(name)
        c.add("nO", numpy.float32(nO))
        c.add("bi", numpy.float32(1 if bi else 0))
        c.add("depth", numpy.float32(depth))
        c.add("LSTM", L)
        c.add("HC0", HC0)
        c.add_padded("X", Xp)
        c.add_padded("Y", Y)
        c.add_padded("dY", Padded(dY, Y.size_at_t, Y.lengths, Y.indices))
        if torch is not None:
            Yt, dX, dL, dHC0 = torch_gradients(L, HC0, Xp, dY, nI, nO, bi, depth)
            # The two references agree on the forward, or the weight mapping is wrong.
            assert numpy.abs(Yt - Y.data).max() < 1e-5, (name, numpy.abs(Yt - Y.data).max())
            c.add("dX", dX)
            c.add("d.LSTM", dL)
            c.add("d.HC0", dHC0)
        return c

    return (name, make)


CASES = [
    lstm_case("lstm", False, 1, 3, 4, [4, 2, 3, 1], 501),
    lstm_case("lstm_depth2", False, 2, 3, 5, [3, 5, 1, 5], 502),
    lstm_case("bilstm", True, 1, 3, 4, [4, 2, 3, 1], 503),
    lstm_case("bilstm_depth2", True, 2, 4, 6, [2, 6, 3, 3, 1], 504),
    lstm_case("lstm_one", False, 1, 2, 3, [1], 505),
]


if __name__ == "__main__":
    sys.exit(run_main(CASES, sys.argv, fix_random_seed))

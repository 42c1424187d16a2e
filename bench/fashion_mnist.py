"""Minimal Fashion-MNIST loader (gzip + struct + numpy, no extra deps).

    X_train, y_train, X_test, y_test = load()

X is float32 of shape (n, 784) scaled to [0, 1]; y is int64 of shape (n,).
The IDX files are read from $FASHION_MNIST_DIR, or
/usr/share/datasets/fashion-mnist by default.
"""
import gzip
import os
import struct

import numpy as np

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
N_CLASSES = 10


def data_dir():
    return os.environ.get("FASHION_MNIST_DIR", DEFAULT_DIR)


def _open(path):
    if os.path.exists(path):
        return gzip.open(path, "rb")
    if path.endswith(".gz") and os.path.exists(path[:-3]):
        return open(path[:-3], "rb")  # tolerate an already-decompressed file
    raise FileNotFoundError(path)


def read_images(path):
    with _open(path) as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 2051:
            raise ValueError(f"{path}: bad IDX image magic {magic}")
        buf = f.read(n * rows * cols)
    if len(buf) != n * rows * cols:
        raise ValueError(f"{path}: truncated ({len(buf)} of {n * rows * cols} bytes)")
    X = np.frombuffer(buf, dtype=np.uint8).reshape(n, rows * cols)
    return X.astype(np.float32) / np.float32(255.0)


def read_labels(path):
    with _open(path) as f:
        magic, n = struct.unpack(">II", f.read(8))
        if magic != 2049:
            raise ValueError(f"{path}: bad IDX label magic {magic}")
        buf = f.read(n)
    if len(buf) != n:
        raise ValueError(f"{path}: truncated ({len(buf)} of {n} labels)")
    return np.frombuffer(buf, dtype=np.uint8).astype(np.int64)


def load_split(split, directory=None):
    """split: 'train' or 't10k'. Returns (X float32 (n, 784), y int64 (n,))."""
    d = directory or data_dir()
    X = read_images(os.path.join(d, f"{split}-images-idx3-ubyte.gz"))
    y = read_labels(os.path.join(d, f"{split}-labels-idx1-ubyte.gz"))
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"{split}: {X.shape[0]} images but {y.shape[0]} labels")
    return X, y


def load(directory=None):
    """Returns (X_train, y_train, X_test, y_test)."""
    X_train, y_train = load_split("train", directory)
    X_test, y_test = load_split("t10k", directory)
    return X_train, y_train, X_test, y_test


def one_hot(y, n_classes=N_CLASSES, dtype=np.float32):
    y = np.asarray(y, dtype=np.int64)
    out = np.zeros((y.shape[0], n_classes), dtype=dtype)
    out[np.arange(y.shape[0]), y] = 1
    return out


if __name__ == "__main__":
    Xtr, ytr, Xte, yte = load()
    print(Xtr.shape, Xtr.dtype, float(Xtr.min()), float(Xtr.max()), ytr.shape, ytr[:10])
    print(Xte.shape, yte.shape, np.bincount(yte), one_hot(yte[:3]))

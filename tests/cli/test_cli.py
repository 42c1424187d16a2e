#!/usr/bin/env python3
"""Runs the built `tenon` command (tools/tenon) on small configs: describe's widths, train for
an epoch on a slice of Fashion-MNIST and on JSON-lines documents, evaluate and predict the
directories it writes, and errors (each with its tenon id, a non-zero status, no crash).

Usage: tests/cli/test_cli.py TENON_BINARY SOURCE_ROOT. The Fashion-MNIST cases are skipped
(and said so) where Debian's dataset-fashion-mnist is not installed."""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

TENON, ROOT = sys.argv[1], sys.argv[2]
# tests/codegen/codegen_load: loads a trained directory into the type `tenon codegen` wrote for
# an example config (at build time) and into the model its config builds; same predictions?
CODEGEN_LOAD = sys.argv[3] if len(sys.argv) > 3 else None
FASHION = os.path.join(ROOT, "examples", "configs", "fashion_mnist.cfg")
TEXTCAT = os.path.join(ROOT, "examples", "configs", "textcat.cfg")
TAGGER = os.path.join(ROOT, "examples", "configs", "tagger.cfg")
TEXTCAT_CNN = os.path.join(ROOT, "examples", "configs", "textcat_cnn.cfg")
DATA = "/usr/share/datasets/fashion-mnist"
# A small slice, so that the test takes seconds.
SLICE = ["--corpora.train.limit", "2000", "--corpora.dev.limit", "500"]

checks = failures = 0


def check(ok, what, out=""):
    global checks, failures
    checks += 1
    if not ok:
        failures += 1
        print("FAILED: %s\n%s" % (what, out[-3000:]))


def tenon(*args, stdin=""):
    p = subprocess.run([TENON] + list(args), input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def fails_with(ident, args, status=1, also=()):
    """The command exits with `status`, its stderr names `ident` (and each of `also`), and it is
    a tenon error, not a crash."""
    rc, out, err = tenon(*args)
    check(rc == status, "%s: status %d, expected %d" % (" ".join(args), rc, status), out + err)
    check("[" + ident + "]" in err, "%s: %s not in stderr" % (" ".join(args), ident), err)
    check("Sanitizer" not in err and "runtime error" not in err, "%s: a sanitizer's report" % " ".join(args), err)
    for a in also:
        check(a in err, "%s: %r not in stderr" % (" ".join(args), a), err)
    return err


def table_rows(out):
    """The per-epoch rows: (epoch, steps, loss, dev accuracy, rate, seconds)."""
    rows = []
    for line in out.splitlines():
        m = re.match(r"^(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s*$", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), float(m.group(3)), float(m.group(4)), int(m.group(5)),
                         float(m.group(6))))
    return rows


def fashion(tmp):
    # describe: every width, nI = 784 from the images, nO = 10 from the labels.
    rc, out, err = tenon("describe", FASHION, "--corpora.train.limit", "200")
    check(rc == 0, "describe: status %d" % rc, out + err)
    for w in ["relu  nO=512  nI=784  (401920 params)", "relu  nO=512  nI=512", "softmax  nO=10  nI=512",
              "669706 parameters"]:
        check(w in out, "describe: %r in its output" % w, out)
    rc, out, err = tenon("describe", FASHION, "--no-data")
    check(rc == 0 and "relu  nO=512  nI=?" in out, "describe --no-data: unknown widths as ?", out + err)

    # train: one epoch on 2000 images; the table's header and one row; the directory's two files.
    model_dir = os.path.join(tmp, "fashion")
    rc, out, err = tenon("train", FASHION, "--output", model_dir, "--training.max_epochs", "1", *SLICE)
    check(rc == 0, "train: status %d" % rc, out + err)
    check(re.search(r"^E\s+#\s+LOSS\s+DEV_ACC\s+EX/S\s+SECS", out, re.M) is not None, "train: the table's header", out)
    rows = table_rows(out)
    check(len(rows) == 1 and rows[0][0] == 1 and rows[0][1] == 16, "train: one row, epoch 1 after 16 steps", out)
    check("\r" not in out + err, "train: no progress bar when the output is not a terminal", out + err)
    for f in ["config.cfg", "model.tenon"]:
        check(os.path.isfile(os.path.join(model_dir, f)), "train: %s written" % f)
    with open(os.path.join(model_dir, "config.cfg")) as f:
        saved = f.read()
    check('labels = ["0","1","2","3","4","5","6","7","8","9"]' in saved and "max_epochs = 1" in saved and
          "limit = 2000" in saved, "train: the saved config has the labels and the overrides", saved)
    if not rows:
        return
    dev_acc = rows[0][3]
    check(0.4 < dev_acc <= 1.0, "train: dev accuracy %.4f after an epoch on 2000 images" % dev_acc, out)

    # evaluate: the same dev set, the same weights (the averages train saved): the same accuracy.
    rc, out, err = tenon("evaluate", model_dir)
    m = re.search(r"on \[corpora\.dev\]: accuracy ([\d.]+) \((\d+) examples", out)
    check(rc == 0 and m is not None, "evaluate: status %d, an accuracy" % rc, out + err)
    if m:
        check(abs(float(m.group(1)) - dev_acc) < 1e-9 and m.group(2) == "500",
              "evaluate: accuracy %s on %s examples == train's %.4f on 500" % (m.group(1), m.group(2), dev_acc), out)

    codegen_round_trip("fashion_mnist", model_dir)

    # predict: a line per image, a label of the ten and a score in (0, 1].
    rc, out, err = tenon("predict", model_dir, os.path.join(DATA, "t10k-images-idx3-ubyte.gz"), "--limit", "5")
    lines = [l for l in out.splitlines() if not l.startswith("#")]
    check(rc == 0 and len(lines) == 5, "predict: 5 lines", out + err)
    for i, l in enumerate(lines):
        parts = l.split("\t")
        check(len(parts) == 3 and parts[0] == str(i + 1) and parts[1] in [str(k) for k in range(10)] and
              0 < float(parts[2]) <= 1, "predict: line %r" % l, out)

    # A model file that does not fit its config, and a truncated one: the load's ids, the file named.
    with open(os.path.join(model_dir, "model.tenon"), "rb") as f:
        good = f.read()
    with open(os.path.join(model_dir, "model.tenon"), "wb") as f:
        f.write(good[:1000])
    fails_with("tenon-E202", ["evaluate", model_dir], also=["model.tenon"])
    with open(os.path.join(model_dir, "model.tenon"), "wb") as f:
        f.write(good)
    # (DIR/config.cfg is the config as run, its ${...} resolved: a [vars] override changes nothing.)
    fails_with("tenon-E205", ["evaluate", model_dir, "--model.*.hidden1.nO", "256"], also=["model.tenon"])
    rc, out, err = tenon("evaluate", model_dir, "--corpus", "test")
    check(rc == 1 and "[tenon-E322] [corpora.test]" in err, "evaluate --corpus test: no such corpus", err)

    # Broken configs: a misspelt layer, a misspelt optimizer, a bad value, an unknown key.
    bad = os.path.join(tmp, "bad.cfg")
    with open(FASHION) as f:
        text = f.read()
    with open(bad, "w") as f:
        f.write(text.replace('"Relu.v1"', '"Rleu.v1"', 1))
    fails_with("tenon-E310", ["train", bad, "--output", os.path.join(tmp, "no")], also=["[model.*.hidden1]", "Relu.v1"])
    fails_with("tenon-E310", ["describe", bad])
    with open(bad, "w") as f:
        f.write(text.replace('"Adam.v1"', '"Adma.v1"'))
    fails_with("tenon-E327", ["train", bad, "--output", os.path.join(tmp, "no")], also=["[training.optimizer]"])
    with open(bad, "w") as f:
        f.write(text.replace("batch_size = 128", "batch_size = 128\nbatch_sise = 64"))
    fails_with("tenon-E312", ["train", bad, "--output", os.path.join(tmp, "no")], also=["[training] batch_sise"])
    with open(bad, "w") as f:
        f.write(text.replace("[model.*.output]", "[model.*.output]\nnO = 5"))
    fails_with("tenon-E324", ["train", bad, "--output", os.path.join(tmp, "no")] + SLICE, also=["10 labels"])
    fails_with("tenon-E321", ["train", FASHION, "--output", os.path.join(tmp, "no"), "--training.max_epochs", "0"])
    fails_with("tenon-E324", ["train", FASHION, "--output", os.path.join(tmp, "no"), "--training.labels", '["0", "1"]'] +
               SLICE, also=['the label "', "2 labels"])
    fails_with("tenon-E313", ["train", FASHION, "--output", os.path.join(tmp, "no"), "--training.batch_size", '"big"'])
    fails_with("tenon-E306", ["train", FASHION, "--output", os.path.join(tmp, "no"), "--training.max_epoch", "1"])
    fails_with("tenon-E140", ["train", FASHION, "--output", os.path.join(tmp, "no"), "--paths.data", '"/nonexistent"'],
               also=["/nonexistent/train-images-idx3-ubyte.gz"])
    check(not os.path.exists(os.path.join(tmp, "no")), "a failed train writes no directory")


def text(tmp):
    random.seed(0)
    words = {"en": "the quick brown fox jumps over lazy dog and cat with house tree".split(),
             "de": "der schnelle braune fuchs springt über den faulen hund und katze haus baum".split(),
             "fr": "le rapide renard brun saute par dessus chien paresseux et chat maison arbre".split()}
    files = {}
    for name, n in [("train", 300), ("dev", 60)]:
        files[name] = os.path.join(tmp, name + ".jsonl")
        with open(files[name], "w") as f:
            for i in range(n):
                lab = random.choice(sorted(words))
                toks = [random.choice(words[lab]) for _ in range(random.randint(3, 10))]
                if i % 2:
                    f.write(json.dumps({"text": " ".join(toks), "label": lab}) + "\n")
                else:  # the same documents as ids: a token's id is the FNV-1a hash that "text" gives
                    ids = []
                    for t in toks:
                        h = 2166136261
                        for b in t.encode():
                            h = ((h ^ b) * 16777619) & 0xFFFFFFFF
                        ids.append(h)
                    f.write(json.dumps({"ids": ids, "label": lab}) + "\n")
    paths = ["--paths.train", files["train"], "--paths.dev", files["dev"]]

    rc, out, err = tenon("describe", TEXTCAT, *paths)
    check(rc == 0 and "hashembed  nO=64  nV=5000" in out and "softmax  nO=3  nI=64" in out,
          "describe textcat: the embedding's and the output's widths", out + err)
    model_dir = os.path.join(tmp, "textcat")
    rc, out, err = tenon("train", TEXTCAT, "--output", model_dir, "--training.max_epochs", "4", *paths)
    check(rc == 0, "train textcat: status %d" % rc, out + err)
    rows = table_rows(out)
    check(len(rows) == 4 and "WORDS/S" in out, "train textcat: 4 rows, words per second", out)
    check(rows and rows[-1][3] > 0.8, "train textcat: dev accuracy above 0.8", out)
    check(rows and rows[-1][2] < rows[0][2], "train textcat: the loss goes down", out)
    rc, out, err = tenon("evaluate", model_dir)
    check(rc == 0 and re.search(r"accuracy [\d.]+ \(60 examples", out) is not None, "evaluate textcat", out + err)
    # The same seed trains the same model (shuffling and dropout draw from it), byte for byte.
    again = os.path.join(tmp, "textcat-again")
    rc, out, err = tenon("train", TEXTCAT, "--output", again, "--training.max_epochs", "4", *paths)
    with open(os.path.join(model_dir, "model.tenon"), "rb") as a, open(os.path.join(again, "model.tenon"), "rb") as b:
        check(rc == 0 and a.read() == b.read(), "train textcat twice with one seed: the same model file", out + err)
    codegen_round_trip("textcat", model_dir)
    # codegen of a trained directory: its config.cfg; to a file, in a namespace of one's own.
    header = os.path.join(tmp, "textcat.hpp")
    rc, out, err = tenon("codegen", model_dir, "--output", header, "--namespace", "langid")
    text_h = open(header).read() if os.path.isfile(header) else ""
    check(rc == 0 and "namespace langid {" in text_h and "HashEmbed<64>(5000, HashEmbedOptions{.seed = 8u" in text_h
          and "reduce_mean()" in text_h and "using Model = decltype(make_model());" in text_h,
          "codegen DIR --output FILE --namespace langid", out + err + text_h)
    # spaCy's text classifier architectures: TextCatCNN.v2 over HashEmbedCNN.v2, trained too.
    cnn_dir = os.path.join(tmp, "textcat-cnn")
    rc, out, err = tenon("train", TEXTCAT_CNN, "--output", cnn_dir, "--training.max_epochs", "3", *paths)
    rows = table_rows(out)
    check(rc == 0 and len(rows) == 3 and rows[-1][3] > 0.8, "train textcat_cnn: dev accuracy above 0.8", out + err)
    # Its [training.batcher] (spaCy's batch_by_words.v1, a compounding size) and its warmup_linear
    # learning rate: the batches grow, so each epoch takes fewer steps than the one before.
    per_epoch = [r[1] - (rows[i - 1][1] if i else 0) for i, r in enumerate(rows)]
    check(len(per_epoch) == 3 and per_epoch[0] > per_epoch[1] > per_epoch[2],
          "train textcat_cnn: batches by words that grow (fewer steps each epoch)", out)
    cnn_bad = os.path.join(tmp, "cnn-bad.cfg")
    with open(TEXTCAT_CNN) as f:
        cnn_text = f.read()
    for old, new, ident, also in [
            ('"compounding.v1"', '"compouding.v1"', "tenon-E310", ["[training.batcher.size] @schedules",
                                                                    "compounding.v1"]),
            ("initial_rate = 0.002", "initial_rate = -0.002", "tenon-E251", ["warmup_linear(-0.002, 5, 2000)"]),
            ("warmup_steps = 5", "warmup_steps = 5\nwarmup = 3", "tenon-E312",
             ["[training.optimizer.learn_rate] warmup", "did you mean warmup_steps"]),
            ("labels = null", "labels = null\nbatch_size = 32", "tenon-E321", ["not both"]),
            ('"spacy.batch_by_words.v1"', '"spacy.batch_by_wrds.v1"', "tenon-E321", ["spacy.batch_by_sequence.v1"])]:
        with open(cnn_bad, "w") as f:
            f.write(cnn_text.replace(old, new, 1))
        fails_with(ident, ["train", cnn_bad, "--output", os.path.join(tmp, "no")] + paths, also=also)
    codegen_round_trip("textcat_cnn", cnn_dir)
    inputs = os.path.join(tmp, "inputs.jsonl")
    with open(inputs, "w") as f:
        f.write('{"text": "the lazy dog and the cat"}\n{"text": "der faulen hund und katze"}\n'
                '{"text": "le chien paresseux et le chat"}\n\n{"ids": []}\n')
    rc, out, err = tenon("predict", model_dir, inputs)
    lines = [l.split("\t") for l in out.splitlines() if not l.startswith("#")]
    check(rc == 0 and [l[1] for l in lines[:3]] == ["en", "de", "fr"] and len(lines) == 4,
          "predict textcat: en, de, fr and an empty document", out + err)

    rc, out2, err = tenon("predict", model_dir, "-", stdin=open(inputs).read())
    check(rc == 0 and out2 == out, "predict textcat from standard input: the same lines", out2 + err)

    # Bad documents: the file and line, the id.
    bad = os.path.join(tmp, "bad.jsonl")
    with open(bad, "w") as f:
        f.write('{"text": "a b", "label": "en"}\n{"text": 3, "label": "en"}\n')
    fails_with("tenon-E323", ["train", TEXTCAT, "--output", os.path.join(tmp, "no"), "--paths.train", bad,
                              "--paths.dev", files["dev"]], also=[bad + ":2"])
    with open(bad, "w") as f:
        f.write('{"text": "a b", "label": "en"}\nnot json\n')
    fails_with("tenon-E323", ["predict", model_dir, bad], also=[bad + ":2", "not JSON"])
    with open(bad, "w") as f:
        f.write('{"text": "a b", "label": "es"}\n')
    # (The saved config's paths are resolved: override the corpus' own key.)
    fails_with("tenon-E324", ["evaluate", model_dir, "--corpora.dev.path", '"%s"' % bad], also=['"es"'])
    fails_with("tenon-E311", ["train", TEXTCAT, "--output", os.path.join(tmp, "no")], also=["--paths.train"])
    fails_with("tenon-E322", ["train", TEXTCAT, "--output", os.path.join(tmp, "no"), *paths,
                              "--corpora.train.@readers", '"tenon.Corpus.v9"'], also=["tenon.JsonlCorpus.v1"])


def codegen_round_trip(kind, model_dir):
    if not CODEGEN_LOAD:
        return
    p = subprocess.run([CODEGEN_LOAD, kind, model_dir], capture_output=True, text=True)
    check(p.returncode == 0 and "predictions equal" in p.stdout,
          "codegen %s: the generated type loads %s and predicts the same bits" % (kind, model_dir), p.stdout + p.stderr)


def codegen_and_describe(tmp):
    # Every example config has a C++ form (the headers are compiled by the codegen test).
    for cfg, want in [(TAGGER, ["with_array<List<Floats2d>>(Softmax<17>(SoftmaxOptions{.normalize_outputs = false}))",
                                "Maxout<96, 288, 3>", "static_assert(std::is_same_v<Model::In, tenon::List<tenon::Ints2d>>"]),
                      (TEXTCAT_CNN, ["list2ragged<Floats2d>()", "reduce_mean()", "Softmax<>()"]),
                      (FASHION, ["Relu<512>(DenseOptions{.dropout = 0.2})", "Softmax<>()"])]:
        rc, out, err = tenon("codegen", cfg)
        check(rc == 0 and all(w in out for w in want), "codegen %s" % os.path.basename(cfg), out + err)
    rc, out, err = tenon("codegen", TAGGER, "--model.tok2vec.encode.width", "64")
    check(rc == 0 and "Maxout<64, 192, 3>" in out, "codegen with an override", out + err)
    # describe --no-data: any model, a tagger (List[Ints2d] -> List[Floats2d]) too.
    rc, out, err = tenon("describe", TAGGER, "--no-data")
    check(rc == 0 and "a model from List[Ints2d] to List[Floats2d]" in out and "softmax  nO=17" in out and
          "hashembed  nO=96  nV=5000" in out, "describe --no-data: the tagger", out + err)
    bad = os.path.join(tmp, "alone.cfg")
    with open(bad, "w") as f:
        f.write('[model]\n@layers = "with_array.v1"\n\n[model.layer]\n@layers = "Relu.v1"\n')
    fails_with("tenon-E328", ["codegen", bad], also=["signatures"])
    fails_with("tenon-E328", ["codegen", TAGGER, "--namespace", "2x"])
    fails_with("tenon-E320", ["codegen"], status=2)


def usage(tmp):
    fails_with("tenon-E320", ["frobnicate"], status=2)
    fails_with("tenon-E320", ["train", FASHION], status=2, also=["--output"])
    fails_with("tenon-E320", ["predict", tmp], status=2)
    fails_with("tenon-E320", ["predict", tmp, "x", "--limit", "-1"], status=2)
    fails_with("tenon-E320", ["describe", FASHION, "--verbose"], status=2)
    fails_with("tenon-E326", ["evaluate", tmp], also=["config.cfg"])
    fails_with("tenon-E308", ["describe", os.path.join(tmp, "missing.cfg")])
    rc, out, err = tenon("--help")
    check(rc == 0 and "tenon train CONFIG --output DIR" in out, "--help", out + err)


with tempfile.TemporaryDirectory() as tmp:
    usage(tmp)
    codegen_and_describe(tmp)
    text(tmp)
    if os.path.isfile(os.path.join(DATA, "train-images-idx3-ubyte.gz")):
        fashion(tmp)
    else:
        print("skipped the Fashion-MNIST cases: %s is not installed (Debian's dataset-fashion-mnist)" % DATA)

print("%d checks, %d failed" % (checks, failures))
sys.exit(1 if failures else 0)

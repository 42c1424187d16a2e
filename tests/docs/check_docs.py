#!/usr/bin/python3
"""The C++ code blocks of README.md and docs/*.md, compiled and run by `make test`.

Usage:
  check_docs.py generate ROOT OUTDIR PAGE...   write OUTDIR/doc_PAGE.cpp for each page (a Catch2
                                               test file; PAGE is README or a docs/ file's stem)
  check_docs.py fail ROOT --compiler CXX       the blocks that must not compile, through
                                               tests/compile_fail/run.py

How a block is treated (each ```cpp block; other languages are not compiled):
  * An API summary -- a block whose first line names a header in a comment,
    `// <tenon/layers/relu.hpp>` -- lists declarations, not code to compile: the header it
    names must exist.
  * A block with `int main(` is a program: compiled, and run by a test case named after the
    page and line (`docs/layers.md:38`); it must return 0 and throw nothing.
  * Any other block is a fragment of a program (its includes go to the top of the test file,
    with <tenon/tenon.hpp> and <iostream>): its function, class and namespace-scope
    declarations (`auto make_model() { ... }`, `struct Mlp ...`) stay at namespace scope, its
    statements become the body of a function that a test case runs.
Every block lives in its own namespace, with `using namespace tenon;`, so that blocks can reuse
names. A comment just before the block (hidden when the page is rendered) says what a block
needs, in this form:

  <!-- doc-test: OPTION; OPTION ...
  C++ lines that run before the block's statements (declarations it uses)
  -->

  continues          the block goes on from the one before it on the page (one program in
                     several blocks, with text between them)
  top-level          every line is a namespace-scope declaration
  calls EXPR         for a block of declarations: a test case runs EXPR after the C++ lines
                     of the comment (`calls train()`)
  compile-only       compiled, not run (a training run of minutes, a file it reads)
  throws tenon-E118  running it throws a tenon::Error with that id (the block shows an error)
  fails tenon-E001   it must not compile, and the first error has that id (diagnostics.md's
                     snippets; checked with the same rules as tests/compile_fail/)
  skip REASON        not compiled (say why)

A page's examples that share data (a list of sequences, a model) read it from one comment,
anywhere on the page, whose lines are namespace-scope declarations every block of the page sees
(a block's own declaration of the same name hides it):

  <!-- doc-test-page:
  List<Floats2d> Xs{Floats2d({2, 4}), Floats2d({3, 4})};
  -->

Errors in a generated file point at the markdown line (`#line`). Standard library only.
"""
import os
import re
import subprocess
import sys
import tempfile

OPTIONS = ("continues", "top-level", "calls", "compile-only", "throws", "fails", "skip")


class Block:
    def __init__(self, page, line, lang, lines, marker):
        self.page, self.line, self.lang, self.lines = page, line, lang, lines
        self.options, self.prelude = {}, []
        if marker is not None:
            head, *self.prelude = marker
            for opt in filter(None, (o.strip() for o in head.split(";"))):
                name, _, arg = opt.partition(" ")
                if name not in OPTIONS:
                    sys.exit("%s:%d: unknown doc-test option %r (known: %s)"
                             % (page, line, name, ", ".join(OPTIONS)))
                self.options[name] = arg.strip()

    @property
    def where(self):
        return "%s:%d" % (self.page, self.line)

    def text(self):
        return "\n".join(self.lines)

    def synopsis_header(self):
        first = next((l.strip() for l in self.lines if l.strip()), "")
        m = re.search(r"//\s*<(tenon/[\w/.]+\.hpp)>", first)
        return m.group(1) if m else None


def page_declarations(root, page):
    """(line, C++ lines) of the page's `doc-test-page` comment: declarations every fragment of
    the page sees (the data its examples share), or None."""
    lines = open(os.path.join(root, page), encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if re.match(r"^\s*<!--\s*doc-test-page:\s*$", line):
            j = i + 1
            while "-->" not in lines[j]:
                j += 1
            return i + 2, lines[i + 1:j]
    return None


def read_blocks(root, page):
    """The fenced code blocks of one page, with the doc-test comment before each (if any)."""
    path = os.path.join(root, page)
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, marker, i = [], None, 0
    while i < len(lines):
        m = re.match(r"^\s*```(\w*)\s*$", lines[i])
        c = re.match(r"^\s*<!--\s*doc-test:(.*)$", lines[i])
        if c:
            body = [c.group(1)]
            while "-->" not in body[-1]:
                i += 1
                body.append(lines[i])
            body[-1] = body[-1][:body[-1].index("-->")]
            marker = [b for b in body] if body[-1].strip() else body[:-1]
            i += 1
            continue
        if m:
            j = i + 1
            while not re.match(r"^\s*```\s*$", lines[j]):
                j += 1
            indent = len(lines[i]) - len(lines[i].lstrip())
            body = [l[indent:] if l[:indent].strip() == "" else l for l in lines[i + 1:j]]
            blocks.append(Block(page, i + 1, m.group(1), body, marker))
            marker, i = None, j + 1
            continue
        if lines[i].strip():
            marker = None  # a doc-test comment belongs to the block right after it
        i += 1
    return blocks


def units(blocks):
    """The C++ blocks to compile, `continues` blocks joined to the one before them."""
    out = []
    for b in blocks:
        if b.lang != "cpp" or "skip" in b.options or b.synopsis_header():
            continue
        if "continues" in b.options:
            if not out:
                sys.exit("%s: `continues`, but no block before it on the page" % b.where)
            out[-1].append(b)
        else:
            out.append([b])
    return out


DECL_HEAD = re.compile(r"^(template\b|struct\b|class\b|namespace\b|inline\b|static\b|using\b|enum\b|"
                       r"[\w:<>,&*\s]+\b\w+\s*\([^;]*\)\s*(const\s*)?(->[^;{]*)?(\{.*)?\s*(//.*)?$)")


def split_fragment(lines):
    """(namespace-scope lines, statement lines) of a fragment: a declaration starts at column 0
    (a function, class, template or using) and runs to its closing brace or semicolon."""
    top, body, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        if line and not line[0].isspace() and DECL_HEAD.match(line):
            depth, j = 0, i
            while True:
                code = re.sub(r"//.*", "", lines[j])
                depth += code.count("{") - code.count("}")
                if depth <= 0 and (code.rstrip().endswith("}") or code.rstrip().endswith(";")):
                    break
                j += 1
            top += [(k, lines[k]) for k in range(i, j + 1)]
            i = j + 1
        else:
            body.append((i, line))
            i += 1
    return top, body


def emit_lines(out, block, numbered, prefix=""):
    """numbered: (index in block, text) pairs; a #line before each run of consecutive lines."""
    last = None
    for k, text in numbered:
        if last is None or k != last + 1:
            out.append('#line %d "%s"' % (block.line + 1 + k, block.page))
        out.append(prefix + text)
        last = k


def generate_page(root, page, outpath):
    blocks = read_blocks(root, page)
    for b in blocks:
        h = b.synopsis_header()
        if b.lang == "cpp" and h and not os.path.exists(os.path.join(root, "include", h)):
            sys.exit("%s: the summary names <%s>, which does not exist" % (b.where, h))
    includes, parts, cases = ["<tenon/tenon.hpp>", "<iostream>"], [], []
    shared = page_declarations(root, page)
    if shared:
        parts += ["namespace doc_page {", "using namespace tenon;", '#line %d "%s"' % (shared[0], page)]
        parts += shared[1] + ["}  // namespace doc_page"]
    for unit in units(blocks):
        first = unit[0]
        opts = {k: v for b in unit for k, v in b.options.items()}
        if "fails" in opts:
            continue  # check_docs.py fail
        ns = "doc_%d" % first.line
        text = "\n".join(b.text() for b in unit)
        program = re.search(r"\bint\s+main\s*\(", text) is not None
        whole = program or "top-level" in opts
        parts.append("namespace %s {\nusing namespace tenon;" % ns)
        if shared:
            parts.append("using namespace doc_page;")
        statements = []
        for b in unit:
            numbered = []
            for k, line in enumerate(b.lines):
                inc = re.match(r"^\s*#\s*include\s*(<[^>]+>|\"[^\"]+\")", line)
                if inc:
                    includes.append(inc.group(1))
                    continue
                numbered.append((k, line))
            if whole:
                emit_lines(parts, b, numbered)
            else:
                top, body = split_fragment([l for _, l in numbered])
                idx = [k for k, _ in numbered]
                emit_lines(parts, b, [(idx[k], l) for k, l in top])
                statements.append((b, [(idx[k], l) for k, l in body]))
        if program:
            # main in a namespace is an ordinary function: renamed, with the return main has.
            joined = "\n".join(parts)
            joined = re.sub(r"\bint\s+main\s*\(\s*\)", "int doc_main()", joined)
            joined = re.sub(r"\bint\s+main\s*\(\s*int\s+(\w+)\s*,\s*(const\s+)?char\s*\*\*\s*(\w+)\s*\)",
                            r"int doc_main(int \1, char** \3)", joined)
            parts[:] = joined.split("\n")
            # the closing brace of main: the last line that is "}" alone
            for k in range(len(parts) - 1, -1, -1):
                if parts[k].rstrip() == "}":
                    parts.insert(k, "return 0;")
                    break
        statements = [(b, body) for b, body in statements
                      if any(l.strip() and not l.strip().startswith("//") for _, l in body)]
        if "calls" in opts and (statements or program):
            sys.exit("%s: `calls` is for a block of declarations" % first.where)
        if statements or "calls" in opts:
            parts.append("void doc_run() {")
            for line in first.prelude:
                parts.append(line)
            for b, body in statements:
                emit_lines(parts, b, body)
            if "calls" in opts:
                parts.append("%s;" % opts["calls"])
            parts.append("}")
        parts.append("}  // namespace %s" % ns)
        runnable = program or statements or "calls" in opts
        if runnable and "compile-only" not in opts:
            call = "%s::doc_main()" % ns if program else "%s::doc_run()" % ns
            if program and re.search(r"int doc_main\(int", "\n".join(parts)):
                call = '%s::doc_main(1, const_cast<char**>(doc_argv))' % ns
            if "throws" in opts:
                body = ("try { %s; FAIL(\"no exception\"); }\n"
                        "catch (const tenon::Error& e) { CHECK(std::string(e.id()) == \"%s\"); }"
                        % (call, opts["throws"]))
            elif program:
                body = "CHECK(%s == 0);" % call
            else:
                body = "%s;" % call
            cases.append('TEST_CASE("%s") {\n%s\n}' % (first.where, body))
        elif "compile-only" not in opts and "throws" in opts:
            sys.exit("%s: `throws`, but nothing runs" % first.where)
    seen, head = set(), []
    for inc in includes:
        if inc not in seen:
            seen.add(inc)
            head.append("#include %s" % inc)
    out = ["// Generated from %s by tests/docs/check_docs.py: do not edit." % page,
           "#include <catch2/catch.hpp>", "#include <string>"] + head + [
           "[[maybe_unused]] static const char* doc_argv[] = {\"doc\", nullptr};"] + parts + cases
    if not cases:
        out.append('TEST_CASE("%s: every block compiles") { SUCCEED(); }' % page)
    text = "\n".join(out) + "\n"
    if not os.path.exists(outpath) or open(outpath).read() != text:
        with open(outpath, "w") as f:
            f.write(text)


def pages_with_code(root):
    found = ["README.md"] if os.path.exists(os.path.join(root, "README.md")) else []
    found += ["docs/" + f for f in sorted(os.listdir(os.path.join(root, "docs"))) if f.endswith(".md")]
    return [p for p in found if any(b.lang == "cpp" for b in read_blocks(root, p))]


def page_path(name):
    return "README.md" if name == "README" else "docs/%s.md" % name


def generate(root, outdir, names):
    listed = {page_path(n) for n in names}
    missing = [p for p in pages_with_code(root) if p not in listed]
    if missing:
        sys.exit("check_docs.py: %s has C++ code blocks: add it to doc_pages in tests/docs/meson.build"
                 % ", ".join(missing))
    for name in names:
        generate_page(root, page_path(name), os.path.join(outdir, "doc_%s.cpp" % name))


def fail(root, compiler):
    """Every `fails` block, as a compile_fail snippet with its expected id."""
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for page in pages_with_code(root):
            for unit in units(read_blocks(root, page)):
                opts = {k: v for b in unit for k, v in b.options.items()}
                if "fails" not in opts:
                    continue
                first = unit[0]
                name = os.path.join(tmp, "%s_%d.cpp" % (os.path.basename(page)[:-3], first.line))
                with open(name, "w") as f:
                    f.write("// expect: %s\n" % opts["fails"])
                    if not any("#include" in b.text() for b in unit):  # a fragment at namespace scope
                        f.write("#include <tenon/tenon.hpp>\nusing namespace tenon;\n")
                    for b in unit:
                        f.write('#line %d "%s"\n%s\n' % (b.line + 1, page, b.text()))
                files.append(name)
        if not files:
            sys.exit("check_docs.py: no `fails` blocks found")
        run = os.path.join(root, "tests", "compile_fail", "run.py")
        return subprocess.call([sys.executable, run, "--compiler", compiler, "--include",
                                os.path.join(root, "include"), "--max-lines-default", "40"] + files)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "generate":
        generate(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 5 and sys.argv[1] == "fail" and sys.argv[3] == "--compiler":
        sys.exit(fail(sys.argv[2], sys.argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

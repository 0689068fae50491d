#!/usr/bin/env python3
"""Turns the code examples of ember's docs and public headers into C++ files that the build
compiles and links (tests/docs), so an example that stops compiling fails the build, with
the error at the example's own line (#line).

What counts as an example:
  - a ```cpp fenced block of a Markdown file;
  - in a header (not a .def table), a run of `//   ` comment lines (three spaces in; `//`
    alone ends the run).
An example is the body of a function, as if after `using namespace ember;` (unless it or its
set-up says `using namespace ember::...`: then it says all it uses), except for what must be at namespace scope: lines
from `template`, `struct`, `class`, `namespace`, `concept`, `enum`, `using namespace` or a
function definition at brace depth 0 to the end of that declaration; `#include` lines go to
the top of the file.

Hidden set-up, code compiled before an example as if written above it:
  - Markdown: an HTML comment `<!-- snippet-setup ... -->` right before a block is that block's
    set-up; `<!-- snippet-prelude ... -->` is set-up for every block of the file.
  - Headers: a section of tests/docs/setup.txt, `[path]` for a header's first example and
    `[path#N]` for its N-th.
Set-up lines may be `use NAME` (the code of a `[fixture NAME]` section of setup.txt),
`continue` (the example goes on in the previous example's function: no new scope) or `skip`
(the comment run is not code: a formula, a table). A line that is only `...` stands for
code left out. A block tagged ```cpp excerpt PATH is not compiled: it must appear in PATH as
it is (up to spaces), so quoted code cannot rot.

  tools/doc_snippets.py --setup tests/docs/setup.txt --out DIR FILE...
writes DIR/docs.cpp (the Markdown files), DIR/headers_<group>.cpp (a few groups of
components) and DIR/main.cpp; --list prints their names, for CMake.
"""
import argparse
import pathlib
import re
import sys

TOP_LEVEL = re.compile(r"^(template\b|struct\s|class\s|namespace\s|concept\s|enum\s|union\s|"
                       r"using\s+namespace\s)")
# A function definition: `type name(params) {` (not a statement such as `for (...) {`).
FUNCTION = re.compile(r"^(?!(for|while|if|switch|return|else|do|case)\b)[A-Za-z_][\w:<>,*& ]*[\s*&]"
                      r"[\w:~]+\s*\([^=;]*\)\s*(const\s*)?(noexcept\s*)?(try\s*)?\{")
HEADER_NAMESPACES = {"nn": "ember::nn", "optim": "ember::optim", "data": "ember::data",
                     "train": "ember::train", "record": "ember::record", "ir": "ember::ir"}


class Failure(Exception):
    pass


# Examples go to a few large files rather than one per input: each file parses the prelude
# and instantiates the templates its examples use once.
GROUPS = {"nn": "nn", "optim": "nn", "record": "nn", "data": "data_train", "train": "data_train"}


def group_name(path):
    """The generated file an input's examples go to."""
    p = pathlib.PurePosixPath(path)
    if p.suffix == ".md":
        return "docs"
    component = p.parts[1] if len(p.parts) > 2 else ""
    return "headers_" + GROUPS.get(component, "core")


class Part:
    """Lines of code from one place: (file, first line number, lines)."""

    def __init__(self, file, line, lines):
        self.file, self.line, self.lines = file, line, lines


class Snippet:
    def __init__(self, file, line, label):
        self.file, self.line, self.label = file, line, label
        self.parts = []  # Parts, in order


def parse_setup(path):
    """setup.txt: {key: (line, [lines])} for [path], [path#N] and [fixture NAME] sections."""
    sections, key = {}, None
    for n, raw in enumerate(pathlib.Path(path).read_text().split("\n"), 1):
        m = re.match(r"^\[(.+)\]\s*$", raw)
        if m:
            key = m.group(1).strip()
            if key in sections:
                raise Failure(f"{path}:{n}: section [{key}] given twice")
            sections[key] = (n + 1, [])
        elif key is not None:
            sections[key][1].append(raw)
        elif raw.strip() and not raw.startswith("#"):
            raise Failure(f"{path}:{n}: text before the first section")
    # blank lines and #-comments around a section's code are not code
    for key, (line, lines) in sections.items():
        while lines and (not lines[-1].strip() or lines[-1].startswith("#")):
            lines.pop()
        while lines and (not lines[0].strip() or lines[0].startswith("#")):
            lines.pop(0)
            line += 1
        sections[key] = (line, lines)
    return sections


def setup_parts(file, line, lines, sections, used, seen=()):
    """Expands `use NAME`; returns (parts, flags) with flags from {continue, skip}."""
    parts, flags, run, run_line = [], set(), [], line
    for i, raw in enumerate(lines):
        s = raw.strip()
        m = re.match(r"^use\s+(\S+)$", s)
        if m or s in ("continue", "skip"):
            if run:
                parts.append(Part(file, run_line, run))
            run, run_line = [], line + i + 1
            if s in ("continue", "skip"):
                flags.add(s)
                continue
            key = "fixture " + m.group(1)
            if key not in sections:
                raise Failure(f"{file}:{line + i}: no [{key}] in the set-up file")
            if key in seen:
                raise Failure(f"{file}:{line + i}: fixture {m.group(1)} uses itself")
            used.add(key)
            fline, flines = sections[key]
            sub, _ = setup_parts(SETUP_FILE, fline, flines, sections, used, seen + (key,))
            parts.extend(sub)
        else:
            if not run:
                run_line = line + i
            run.append(raw)
    if run:
        parts.append(Part(file, run_line, run))
    return parts, flags


def check_excerpt(file, line, lines, target, root):
    path = root / target
    if not path.is_file():
        raise Failure(f"{file}:{line}: excerpt of {target}, which does not exist")
    squash = lambda s: re.sub(r"\s+", " ", s).strip()
    want = [squash(l) for l in lines if l.strip()]
    have = [squash(l) for l in path.read_text().split("\n") if l.strip()]
    for i in range(len(have) - len(want) + 1):
        if have[i:i + len(want)] == want:
            return
    raise Failure(f"{file}:{line}: this excerpt is not in {target} (any more)")


def markdown_snippets(path, rel, sections, used, root):
    text = path.read_text().split("\n")
    snippets, prelude, pending, i = [], [], None, 0
    while i < len(text):
        s = text[i].strip()
        m = re.match(r"^<!--\s*snippet-(setup|prelude)\b(.*)$", text[i])
        if m:
            start, body = i + 1, []
            rest = m.group(2)
            if "-->" in rest and rest.split("-->")[0].strip():
                body = [rest.split("-->")[0]]  # <!-- snippet-setup use model -->
            while "-->" not in rest:
                body.append(text[i + 1] if i + 1 < len(text) else "")
                i += 1
                if i >= len(text):
                    raise Failure(f"{rel}:{start}: unterminated snippet-{m.group(1)} comment")
                rest = text[i]
            if body and "-->" in body[-1]:
                body[-1] = body[-1].split("-->")[0]
            first = start if "-->" in m.group(2) else start + 1
            parts, flags = setup_parts(rel, first, body, sections, used)
            if m.group(1) == "prelude":
                prelude.extend(parts)
            else:
                pending = (parts, flags, start)
            i += 1
            continue
        m = re.match(r"^(\s*)```\s*(\S*)\s*(.*)$", text[i])
        if m:
            indent, lang, info = m.group(1), m.group(2), m.group(3).split()
            start, code = i + 2, []
            i += 1
            while i < len(text) and not text[i].strip().startswith("```"):
                line = text[i]
                code.append(elide(line[len(indent):] if line.startswith(indent) else line.lstrip()))
                i += 1
            if i >= len(text):
                raise Failure(f"{rel}:{start - 1}: unterminated code block")
            i += 1
            if lang != "cpp":
                if pending:
                    raise Failure(f"{rel}:{pending[2]}: snippet-setup before a non-cpp block")
                continue
            setup, flags = pending[:2] if pending else ([], set())
            pending = None
            if info[:1] == ["excerpt"]:
                if len(info) != 2:
                    raise Failure(f"{rel}:{start - 1}: write ```cpp excerpt PATH")
                check_excerpt(rel, start, code, info[1], root)
                continue
            if info:
                raise Failure(f"{rel}:{start - 1}: unknown code block tag {' '.join(info)!r}")
            if "skip" in flags:
                continue
            add_snippet(snippets, rel, start, f"{rel}:{start}", prelude + setup,
                        Part(rel, start, code), "continue" in flags)
            continue
        if pending and s:
            raise Failure(f"{rel}:{pending[2]}: snippet-setup not followed by a ```cpp block")
        i += 1
    return snippets


def header_snippets(path, rel, sections, used):
    text = path.read_text().split("\n")
    snippets, n, i = [], 0, 0
    while i < len(text):
        if re.match(r"^//   \S", text[i]):
            start, code = i + 1, []
            while i < len(text) and text[i].startswith("//   "):
                code.append(elide(text[i][5:]))
                i += 1
            n += 1
            key = rel if n == 1 else f"{rel}#{n}"
            parts, flags = [], set()
            if key in sections:
                used.add(key)
                sline, slines = sections[key]
                parts, flags = setup_parts(SETUP_FILE, sline, slines, sections, used)
            if "skip" in flags:
                continue
            ns = HEADER_NAMESPACES.get(pathlib.PurePosixPath(rel).parts[1]
                                       if len(pathlib.PurePosixPath(rel).parts) > 2 else "")
            add_snippet(snippets, rel, start, f"{key} (line {start})", parts,
                        Part(rel, start, code), "continue" in flags, [ns] if ns else [])
        else:
            i += 1
    return snippets


def elide(line):
    """A line that is only `...` stands for code left out."""
    return "" if line.strip() == "..." else line


def add_snippet(snippets, file, line, label, setup, code, cont, context=()):
    # Examples read as if `using namespace ember;` (and `context`, a header's own namespace)
    # came first, unless they name the ember namespace they use themselves (`using namespace
    # ember::kernel;`): with both, names that exist in each (Scalar) would be ambiguous, as
    # they would be in a program.
    if not cont and not any(re.search(r"using\s+namespace\s+ember::", l)
                            for p in setup + [code] for l in p.lines):
        setup = [Part(file, line, ["using namespace ember;"] +
                      [f"using namespace {ns};" for ns in context])] + setup
    if cont:
        if not snippets:
            raise Failure(f"{file}:{line}: `continue` on the first example of the file")
        snippets[-1].parts.extend(setup + [code])
        return
    s = Snippet(file, line, label)
    s.parts = setup + [code]
    snippets.append(s)


def split_top_level(part):
    """(includes, top-level chunks, body chunks) of a part, each chunk (line, lines)."""
    includes, top, body = [], [], []
    depth, in_top, cur, cur_line, cur_kind = 0, False, [], 0, None

    def flush():
        nonlocal cur
        if cur:
            (top if cur_kind == "top" else body).append((cur_line, cur))
        cur = []

    for k, raw in enumerate(part.lines):
        n = part.line + k
        s = raw.strip()
        if depth == 0 and s.startswith("#include"):
            includes.append((n, raw))
            continue
        kind = "top" if in_top or (depth == 0 and (TOP_LEVEL.match(s) or FUNCTION.match(s))) \
            else "body"
        if kind != cur_kind or (kind == "top" and not in_top and depth == 0):
            flush()
            cur_line, cur_kind = n, kind
        cur.append(raw)
        code = re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'|//.*$', "", raw)
        for c in code:
            if c in "{(":
                depth += 1
            elif c in "})":
                depth -= 1
        if kind == "top":
            in_top = not (depth == 0 and re.search(r"[;}]\s*$", code))
    flush()
    return includes, top, body


def line_directive(line, file):
    return f'#line {line} "{file}"'


def render_group(name, snippets):
    out = [f"// Generated by tools/doc_snippets.py: the examples of {name}. Do not edit.",
           '#include "prelude.h"']
    funcs, global_done = [], False
    # An example that specializes an ember template has its namespace-scope code at global
    # scope (using-directives included): it goes last, where that reaches no other example.
    specializing = lambda s: any(re.match(r"^\s*template\s*<\s*>", l)
                                 for p in s.parts for l in p.lines)
    snippets = sorted(snippets, key=specializing)
    for idx, s in enumerate(snippets):
        includes, top, body = [], [], []
        for p in s.parts:
            a, b, c = split_top_level(p)
            includes += [(n, l, p.file) for n, l in a]
            top += [(n, l, p.file) for n, l in b]
            body += [(n, l, p.file) for n, l in c]
        for n, l, f in includes:
            out += [line_directive(n, f), l]
        specializes = any(re.match(r"^template\s*<\s*>", lines[0].strip()) for _, lines, _ in top)
        fn = f"snippet_{idx}"
        out.append(f"// ---- {s.label}")
        if specializes:
            # An explicit specialization of an ember template must be at global scope.
            if global_done:
                raise Failure(f"{s.file}:{s.line}: a second example in {name} specializes an "
                              "ember template; only one per generated file can")
            global_done = True
            for n, lines, f in top:
                out += [line_directive(n, f)] + lines
            out.append(f"namespace ember_snippets::{name} {{")
            out.append(f"void {fn}() {{")
        else:
            out.append(f"namespace ember_snippets::{name}::s{idx} {{")
            for n, lines, f in top:
                out += [line_directive(n, f)] + lines
            out.append(f"}}  // namespace ember_snippets::{name}::s{idx}")
            out.append(f"namespace ember_snippets::{name} {{")
            out.append(f"void {fn}() {{")
            out.append(f"  using namespace s{idx};")
        for n, lines, f in body:
            out += [line_directive(n, f)] + lines
        out.append("}")
        out.append(f"}}  // namespace ember_snippets::{name}")
        funcs.append(fn)
    out.append(f"namespace ember_snippets {{")
    out.append(f"int run_{name}(bool run) {{")
    if funcs:
        out.append("  if (run) {")
        out += [f"    {name}::{f}();" for f in funcs]
        out.append("  }")
    out.append(f"  return {len(funcs)};")
    out.append("}")
    out.append("}  // namespace ember_snippets")
    return "\n".join(out) + "\n"


def render_main(groups):
    out = ["// Generated by tools/doc_snippets.py. Do not edit.",
           "#include <cstring>", "#include <iostream>", "namespace ember_snippets {"]
    out += [f"int run_{g}(bool run);" for g in groups]
    out += ["}", "", "// The examples compile and link; they are not run (they name files that",
            "// do not exist), unless asked with --run.",
            "int main(int argc, char** argv) {",
            '  bool run = argc > 1 && std::strcmp(argv[1], "--run") == 0;',
            "  int n = 0;"]
    out += [f"  n += ember_snippets::run_{g}(run);" for g in groups]
    out += [f'  std::cout << n << " examples from the docs and public headers compile\\n";',
            "  return 0;", "}"]
    return "\n".join(out) + "\n"


SETUP_FILE = "tests/docs/setup.txt"


def main():
    global SETUP_FILE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=".", help="source root; FILEs are relative to it")
    ap.add_argument("--setup", default=SETUP_FILE)
    ap.add_argument("--out", help="folder for the generated files")
    ap.add_argument("--list", action="store_true", help="print the generated file names")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    root = pathlib.Path(args.root)
    files = sorted(set(args.files))
    groups = sorted({group_name(f) for f in files})
    if args.list:
        print(";".join([g + ".cpp" for g in groups] + ["main.cpp"]))
        return 0
    SETUP_FILE = args.setup
    sections = parse_setup(root / args.setup)
    used, by_group = set(), {g: [] for g in groups}
    for f in files:
        path = root / f
        if f.endswith(".md"):
            by_group[group_name(f)] += markdown_snippets(path, f, sections, used, root)
        elif f.endswith(".def"):
            continue  # X-macro tables: their comments describe the columns, not examples
        else:
            by_group[group_name(f)] += header_snippets(path, f, sections, used)
    stale = sorted(k for k in sections if k not in used)
    if stale:
        raise Failure(f"{args.setup}: no example for section(s) " +
                      ", ".join(f"[{k}]" for k in stale))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for g in groups:
        write_if_changed(out / f"{g}.cpp", render_group(g, by_group[g]))
    write_if_changed(out / "main.cpp", render_main(groups))
    return 0


def write_if_changed(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"doc_snippets: {e}", file=sys.stderr)
        sys.exit(1)

#!/usr/bin/env python3
"""docs/api-parity.md: PyTorch's and Burn's public surface against ember's.

    python3 tools/api_parity.py            # rewrites docs/api-parity.md
    python3 tools/api_parity.py --check    # exits 1 if it is stale or an alias is broken
    python3 tools/api_parity.py --index    # prints every public name found in ember's headers

The peers' surfaces are tools/api_parity/{torch,burn}_surface.txt (`section<TAB>name`);
tools/api_parity/aliases.txt maps a peer name to ember's where they differ
(`peer<TAB>name<TAB>ember name`). ember's side is read from its public headers (the list of
cmake/install.cmake): a small scanner that skips comments, strings, preprocessor lines and
function bodies, and records what is declared at namespace and class scope — functions,
classes, structs, enums, `using` aliases — with its namespace and class, leaving out
`detail` namespaces and private members. The methods that macros generate are expanded from
GENERATED below (EMBER_BINARY(add, ...) declares add and add_scalar).

A peer entry with no alias is looked up under its own name in the places HOMES lists for its
section (class names case-insensitively: torch.nn.ReLU finds nn::Relu), in the tensor, nn and
optim headers only. An alias may name any public declaration; one that names nothing is an
error, not a "missing" row.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tools", "api_parity")
DOC = os.path.join(ROOT, "docs", "api-parity.md")

# Macros that declare methods or classes: macro -> the names it declares from its first
# argument. The check fails if one of them is no longer defined in the headers.
GENERATED = {
    "EMBER_UNARY": ["{}"],
    "EMBER_BINARY": ["{}", "{}_scalar"],
    "EMBER_COMPARE": ["{}", "{}_elem"],
    "EMBER_SPATIAL_RANKS": ["{}1d", "{}2d", "{}3d"],
    "EMBER_DETAIL_ACTIVATION": ["{}"],
}
# Where a name with no alias is looked up, per peer and section ("{}" is the peer's name).
HOMES = {
    ("torch", "tensor"): ["Tensor::{}", "{}", "activation::{}"],
    ("torch", "torch"): ["{}", "Tensor::{}", "linalg::{}"],
    ("torch", "nn.functional"): ["activation::{}", "{}", "Tensor::{}", "linalg::{}"],
    ("torch", "nn"): ["nn::{}"],
    ("torch", "loss"): ["nn::{}"],
    ("torch", "init"): ["nn::Initializer::{}"],
    ("torch", "optim"): ["optim::{}"],
    ("torch", "linalg"): ["linalg::{}", "Tensor::{}"],
    ("torch", "fft"): ["fft::{}"],
    ("torch", "special"): ["special::{}", "Tensor::{}", "activation::{}"],
    ("torch", "signal"): ["{}", "signal::{}"],
    ("burn", "tensor"): ["Tensor::{}", "{}"],
    ("burn", "activation"): ["activation::{}"],
    ("burn", "module"): ["{}"],
    ("burn", "linalg"): ["linalg::{}", "Tensor::{}"],
    ("burn", "grid"): ["{}", "Tensor::{}"],
    ("burn", "signal"): ["{}", "signal::{}"],
    ("burn", "loss.functional"): ["{}", "nn::{}"],
    ("burn", "nn"): ["nn::{}"],
    ("burn", "loss"): ["nn::{}"],
    ("burn", "optim"): ["optim::{}"],
}
# Same-name lookups only find what these headers declare (not, say, ember::normal in
# core/rng.h, a random-number helper, for torch.normal).
API_DIRS = ("ember/tensor/", "ember/nn/", "ember/optim/", "ember/optim.h")
PEERS = {"torch": "PyTorch", "burn": "Burn"}
# One line under each section's heading.
NOTES = {
    ("torch", "tensor"): "`torch.Tensor`'s methods and attributes; a method's row stands for "
                         "the `torch.*` function of the same name too.",
    ("torch", "torch"): "`torch.*` functions that are not `Tensor` methods.",
    ("torch", "nn.functional"): "`torch.nn.functional`, less the losses (in *loss*). A function "
                                "ember offers only as a module maps to the module.",
    ("torch", "nn"): "`torch.nn`'s modules, less the losses.",
    ("torch", "loss"): "`torch.nn`'s losses; each row stands for the functional form too "
                       "(`torch.nn.MSELoss` for `torch.nn.functional.mse_loss`).",
    ("torch", "init"): "`torch.nn.init`; ember's initializers are `nn::Initializer`s.",
    ("torch", "optim"): "`torch.optim`'s optimizers and schedulers, and gradient clipping.",
    ("torch", "special"): "`torch.special`, less what `torch.*` has under its own name.",
    ("torch", "signal"): "The window functions.",
    ("burn", "tensor"): "`Tensor`'s methods, for every kind (Float, Int, Bool).",
    ("burn", "module"): "`burn::tensor::module`'s functions. A function ember offers only as "
                        "a module maps to the module.",
    ("burn", "loss.functional"): "`burn::tensor::loss`.",
    ("burn", "nn"): "`burn::nn`'s modules, activation modules included.",
    ("burn", "optim"): "`burn::optim`, `burn::lr_scheduler` and `burn::grad_clipping`.",
}
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "static_assert", "decltype",
            "alignof", "alignas", "noexcept", "operator", "catch", "typeid", "requires",
            "throw", "new", "delete", "template", "defined"}


# ---- ember's headers ---------------------------------------------------------------------

def public_headers():
    """The headers cmake/install.cmake installs: .h and .inc under ember/, less its private
    regex (.def files declare ops, not API)."""
    text = open(os.path.join(ROOT, "cmake", "install.cmake")).read()
    m = re.search(r'set\(EMBER_PRIVATE_HEADER_REGEX\s*"([^"]+)"\)', text)
    if not m:
        sys.exit("api_parity: EMBER_PRIVATE_HEADER_REGEX not found in cmake/install.cmake")
    private = re.compile(m.group(1).replace("\\\\", "\\"))
    out = []
    for d, _, files in os.walk(os.path.join(ROOT, "ember")):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), ROOT).replace(os.sep, "/")
            if f.endswith((".h", ".inc")) and not private.search(rel):
                out.append(rel)
    return sorted(out)


def strip_source(text):
    """Comments and string/char literals blanked (newlines kept); returns (code, defines)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    code, defines, lines = "".join(out), set(), []
    cont = False
    for line in code.split("\n"):
        if cont or line.lstrip().startswith("#"):
            m = re.match(r"\s*#\s*define\s+(\w+)", line)
            if m:
                defines.add(m.group(1))
            cont = line.rstrip().endswith("\\")
            lines.append("")
        else:
            lines.append(line)
    return "\n".join(lines), defines


def balanced(code, i, open_, close):
    """Index just past the bracket that closes the one at code[i]."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] == open_:
            depth += 1
        elif code[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(code)


def drop_template_prefix(head):
    head = head.strip()
    while head.startswith("template"):
        k = head.find("<")
        if k < 0:
            break
        depth = 0
        for j in range(k, len(head)):
            depth += {"<": 1, ">": -1}.get(head[j], 0)
            if depth == 0:
                head = head[j + 1:].strip()
                break
        else:
            break
    return head


def declared_function(head):
    """The name of the function a declaration head declares, or None."""
    head = drop_template_prefix(head)
    if head.startswith(("friend", "using", "typedef", "return")):
        return None
    depth = 0
    for m in re.finditer(r"[()=]|[A-Za-z_]\w*", head):
        tok = m.group(0)
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0 and tok == "=":
            return None  # a variable with an initializer
        elif depth == 0 and tok not in KEYWORDS and re.match(r"\s*\(", head[m.end():]):
            before = head[:m.start()].rstrip()
            if before.endswith(("::", ".", "->", "~")) or before.endswith("operator"):
                return None
            return tok
    return None


CLASS_RE = re.compile(r"^(?:struct|class|union)\s+(?:EMBER_API\s+|alignas\([^)]*\)\s+)*(\w+)")


def scan(path, text, index):
    """Adds path's public declarations to index: qualified name -> [(path, line)]."""
    code, defines = strip_source(text)
    # A .inc file is included inside class Tensor, in a public section.
    scopes = [("ns", "ember"), ("class", "Tensor", "public")] if path.endswith(".inc") else []
    line_at = lambda k: code.count("\n", 0, k) + 1

    def visible():
        return all(s[0] in ("ns", "class") and s[1] and
                   not any(part.endswith("detail") for part in s[1].split("::")) and
                   (s[0] == "ns" or s[2] == "public") for s in scopes)

    def add(name, k):
        if visible():
            q = "::".join(s[1] for s in scopes) + "::" + name
            index.setdefault(q, []).append((path, line_at(k)))

    def statement(head, k):
        if scopes and scopes[-1][0] == "class":
            parts = re.split(r"\b(public|private|protected)\s*:(?!:)", head)
            for access in parts[1::2]:
                scopes[-1] = scopes[-1][:2] + (access,)
            head = parts[-1]
        body = drop_template_prefix(head)
        m = re.match(r"using\s+(\w+)\s*=", body)
        if m:
            add(m.group(1), k)
            return None
        name = declared_function(head)
        if name:
            add(name, k)
        return body

    i, start, paren, n = 0, 0, 0, len(code)
    while i < n:
        c = code[i]
        if c == "(":
            paren += 1
        elif c == ")":
            paren -= 1
        elif paren == 0 and c in ";{}":
            head = code[start:i]
            if c == ";":
                statement(head, i)
            elif c == "}":
                if scopes:
                    scopes.pop()
            else:
                body = statement(head, i) or ""
                m = re.match(r"namespace\s*([\w:]*)\s*$", body)
                cm = CLASS_RE.match(body)
                if m:
                    scopes.append(("ns", m.group(1)))  # "" for an anonymous namespace
                elif cm:
                    add(cm.group(1), i)
                    scopes.append(("class", cm.group(1),
                                   "private" if body.startswith("class") else "public"))
                elif re.match(r"enum\b", body):
                    em = re.match(r"enum\s+(?:class\s+|struct\s+)?(\w+)", body)
                    if em:
                        add(em.group(1), i)
                    scopes.append(("body", ""))
                else:
                    scopes.append(("body", ""))
            start = i + 1
        elif paren == 0 and c == "E" and code.startswith("EMBER_", i) and \
                (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")):
            m = re.match(r"EMBER_\w+", code[i:])
            j = i + m.end()
            while j < n and code[j] in " \t\n":
                j += 1
            if j < n and code[j] == "(":  # a macro invocation, at declaration level
                end = balanced(code, j, "(", ")")
                macro, arg = m.group(0), code[j + 1:end - 1].split(",")[0].strip()
                for pattern in GENERATED.get(macro, []):
                    add(pattern.format(arg), i)
                i, start = end, end
                continue
            i = j - 1
        i += 1
    return defines


def ember_index():
    index, defines = {}, set()
    for rel in public_headers():
        with open(os.path.join(ROOT, rel)) as f:
            defines |= scan(rel, f.read(), index)
    missing = [m for m in GENERATED if m not in defines]
    return index, missing



# ---- the peers' surfaces and the aliases -------------------------------------------------

def read_surface(peer):
    """(title, [(section, name)]) from tools/api_parity/<peer>_surface.txt."""
    title, rows = PEERS[peer], []
    with open(os.path.join(DATA, peer + "_surface.txt")) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# peer:"):
                title = line.split(":", 1)[1].strip()
            elif line.strip() and not line.startswith("#"):
                rows.append(tuple(fields(line, 2, os.path.relpath(f.name, ROOT))))
    return title, rows


def read_aliases():
    """{(peer, name): (ember name, line number)} from tools/api_parity/aliases.txt."""
    out = {}
    with open(os.path.join(DATA, "aliases.txt")) as f:
        for k, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.strip() and not line.startswith("#"):
                peer, name, ember = fields(line, 3, f"tools/api_parity/aliases.txt:{k}")
                if (peer, name) in out:
                    sys.exit(f"api_parity: aliases.txt:{k}: a second alias for {peer} {name}")
                out[(peer, name)] = (ember, k)
    return out


def fields(line, n, where):
    parts = line.split("\t")
    if len(parts) != n:
        sys.exit(f"api_parity: {where}: expected {n} tab-separated fields: {line!r}")
    return parts


def short(name):
    return re.split(r"\.|::", name)[-1]


def display(qualified):
    return qualified[len("ember::"):]


class Ember:
    def __init__(self, index):
        self.index = index
        self.api = {q for q, locs in index.items() if any(p.startswith(API_DIRS) for p, _ in locs)}
        self.api_ci = {}
        for q in self.api:
            self.api_ci.setdefault(q.lower(), q)

    def alias(self, ember):
        q = ember if ember.startswith("ember::") else "ember::" + ember
        return q if q in self.index else None

    def same_name(self, peer, section, name):
        n = short(name)
        for home in HOMES[(peer, section)]:
            for cand in (n, n.rstrip("_")):
                q = "ember::" + home.format(cand)
                if q in self.api:
                    return q
                if cand[:1].isupper() and q.lower() in self.api_ci:
                    return self.api_ci[q.lower()]
        return None


# ---- docs/api-parity.md ------------------------------------------------------------------

INTRO = """# API parity with PyTorch and Burn

Which of PyTorch's and Burn's public tensor, nn, loss, linalg, ... functions and classes
ember has, name by name: per section, a table of the peer's name, ember's name for the
same capability, and whether ember declares it (*present*) or not (*missing*). A name counts
as present when ember's public headers declare a function, method or class under it; an
option of the peer's that ember's version lacks does not make it missing.

This page is generated; do not edit it. `python3 tools/api_parity.py` rewrites it from

- `tools/api_parity/torch_surface.txt`: PyTorch's surface, generated from torch by
  `tools/api_parity/gen_torch_surface.py` (its docstring says what it folds and leaves out:
  in-place `x_` variants folded into `x`, documented aliases into the op they name, each
  functional loss into its module; private, deprecated, storage/device, sparse, quantized,
  named-tensor and JIT APIs left out);
- `tools/api_parity/burn_surface.txt`: Burn's surface, compiled by hand from its docs;
- `tools/api_parity/aliases.txt`: the peer names ember spells differently (PyTorch's `lt`
  is ember's `Tensor::lower`, `torch.nn.BCELoss` is `nn::BinaryCrossEntropyLoss`);
- ember's public headers, read for declarations only (comments and function bodies are
  skipped; the methods that `EMBER_UNARY`, `EMBER_BINARY`, ... generate are expanded).

A name with no alias is looked up under its own name where that section's ember
counterparts live (`Tensor::`, `activation::`, `nn::`, `optim::`, ...; class names
case-insensitively, so `torch.nn.ReLU` finds `nn::Relu`). A row that says "(`X` is another
op)" is a peer name ember declares for something else (PyTorch's `Tensor.inner` is an inner
product, ember's `Tensor::inner` unwraps an autodiff tensor): it counts as missing.

The `api_parity_is_current` test runs `python3 tools/api_parity.py --check`, which fails
when this page is stale or when an alias names something ember does not declare: after
adding a public op, layer or loss, run `python3 tools/api_parity.py` (and add an alias if
ember's name differs from the peers').
"""


def build(ember, aliases):
    """The page's text and a list of errors (broken aliases)."""
    errors, results = [], []
    surfaces = {p: read_surface(p) for p in PEERS}
    names = {(p, n) for p, (_, rows) in surfaces.items() for _, n in rows}
    for (peer, name), (target, k) in sorted(aliases.items(), key=lambda a: a[1][1]):
        section = next((sec for sec, n in surfaces.get(peer, ("", []))[1] if n == name), None)
        where = f"tools/api_parity/aliases.txt:{k}"
        if (peer, name) not in names:
            errors.append(f"{where}: {peer} {name} is not in {peer}_surface.txt")
        elif target == "-":
            if (peer, section) in HOMES and not ember.same_name(peer, section, name):
                errors.append(f"{where}: `-` for {name}, but ember declares nothing of that name")
        elif ember.alias(target) is None:
            errors.append(f"{where}: {target} (for {name}) is not declared in ember's public "
                          "headers")
    for peer, (title, rows) in surfaces.items():
        sections = {}
        for section, name in rows:
            if (peer, section) not in HOMES:
                errors.append(f"tools/api_parity/{peer}_surface.txt: unknown section {section}")
                continue
            other = None  # a same-named ember declaration that is another op
            if (peer, name) in aliases:
                target = aliases[(peer, name)][0]
                if target == "-":
                    q, other = None, ember.same_name(peer, section, name)
                else:
                    q = ember.alias(target)
            else:
                q = ember.same_name(peer, section, name)
            sections.setdefault(section, []).append((name, q, other))
        results.append((peer, title, sections))
    return render(results), errors


def count(rows):
    present = sum(1 for _, q, _ in rows if q)
    return present, len(rows) - present


def render(results):
    out = [INTRO, "## Counts\n"]
    for peer, title, sections in results:
        out.append(f"{title}:\n\n| section | present | missing | total |\n|---|---:|---:|---:|")
        total = [0, 0]
        for section, rows in sections.items():
            p, m = count(rows)
            total = [total[0] + p, total[1] + m]
            out.append(f"| {section} | {p} | {m} | {p + m} |")
        out.append(f"| **all** | **{total[0]}** | **{total[1]}** | **{sum(total)}** |\n")
    for peer, title, sections in results:
        out.append(f"## {title}\n")
        peer_notes = {"torch": "Generated from the installed torch; see "
                               "`tools/api_parity/gen_torch_surface.py` for what is folded and "
                               "left out.",
                      "burn": "Compiled by hand from Burn's documentation; see the header of "
                              "`tools/api_parity/burn_surface.txt`."}
        out.append(peer_notes[peer] + "\n")
        for section, rows in sections.items():
            p, m = count(rows)
            note = NOTES.get((peer, section), "")
            out.append(f"### {section}\n\n{note + ' ' if note else ''}{p} present, {m} missing.\n")
            out.append(f"| {PEERS[peer]} | ember | status |\n|---|---|---|")
            for name, q, other in rows:
                if q:
                    out.append(f"| `{name}` | `{display(q)}` | present |")
                elif other:
                    out.append(f"| `{name}` | (`{display(other)}` is another op) | missing |")
                else:
                    out.append(f"| `{name}` | | missing |")
            out.append("")
    notes = []
    for peer, title, sections in results:
        p, m = map(sum, zip(*(count(r) for r in sections.values())))
        notes.append(f"against {title}, {p} present and {m} missing of {p + m}")
    out.append("## Summary\n\nIn all: " + "; ".join(notes) + ".\n")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="fail if docs/api-parity.md is stale or an alias is broken")
    ap.add_argument("--index", action="store_true", help="print ember's public names")
    args = ap.parse_args()
    index, missing_macros = ember_index()
    if args.index:
        for q in sorted(index):
            print(display(q), "%s:%d" % index[q][0])
        return 0
    text, errors = build(Ember(index), read_aliases())
    errors += [f"api_parity.py: GENERATED names {m}, which no public header defines"
               for m in missing_macros]
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    if args.check:
        current = open(DOC).read() if os.path.exists(DOC) else ""
        if current != text:
            print("docs/api-parity.md is stale: run `python3 tools/api_parity.py` and commit "
                  "the result", file=sys.stderr)
            return 1
        return 0
    with open(DOC, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

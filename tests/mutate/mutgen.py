"""Mutant generation of mutate.py (docs/TESTING.md "Mutation testing"):
the operators, the lines never mutated, mutant ids, the fixed sample and
the equivalence file. Split from mutate.py by responsibility; mutate.py
builds and checks what this module generates."""
import glob
import hashlib
import os
import re
import sys

TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>//.*)
  | (?P<open>/\*)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|[0-9]+[uUlL]*(?![.\w]))
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<punct><<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!~<>=?:;,.(){}\[\]#\\])
  | (?P<other>.)
""", re.VERBOSE)

ROR = {"<": ["<=", ">="], "<=": ["<", ">"], ">": [">=", "<="],
       ">=": [">", "<"], "==": ["!="], "!=": ["=="]}
DECL_START = {"const", "static", "struct", "union", "enum", "unsigned",
              "signed", "volatile", "register", "typedef", "extern", "return",
              "break", "continue", "goto", "case", "default", "else", "do",
              "if", "while", "for", "switch", "void", "char", "int", "long",
              "short", "_Bool", "bool", "float", "double", "_Alignas"}
SKIP_STATEMENT = {"PBX_ASSERT", "_Static_assert", "static_assert"}
ALIAS_SUFFIX = re.compile(r"_(COUNT|MAX|MIN|FIRST|LAST|NONE_)$")


# ---- mutant generation ------------------------------------------------------

def tokenize(line, in_comment):
    """Code tokens of one line as (kind, text, start), and the comment state."""
    toks = []
    i = 0
    while i < len(line):
        if in_comment:
            end = line.find("*/", i)
            if end < 0:
                return toks, True
            i = end + 2
            in_comment = False
            continue
        m = TOKEN.match(line, i)
        kind = m.lastgroup
        if kind == "open":
            in_comment = True
        elif kind not in ("ws", "comment"):
            toks.append((kind, m.group(), i))
        i = m.end()
    return toks, in_comment


def enum_families(root):
    """Each enum of the freestanding headers, and each error .def file."""
    fams = [["false", "true"]]
    for h in sorted(glob.glob(os.path.join(root, "*", "*.h"))):
        text = open(h, encoding="utf-8").read()
        text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
        text = re.sub(r"(?m)^\s*#.*$", "", text)
        for body in re.findall(r"\benum\s*\w*\s*\{([^}]*)\}", text):
            names = [e.split("=")[0].strip() for e in body.split(",")]
            names = [n for n in names if re.fullmatch(r"[A-Za-z_]\w*", n)
                     and not ALIAS_SUFFIX.search(n)]
            if len(names) > 1:
                fams.append(names)
    for d in sorted(glob.glob(os.path.join(root, "base", "err", "*.def"))):
        names = re.findall(r"PBX_ERR_DEF\(\s*(\w+)", open(d).read())
        if len(names) > 1:
            fams.append(names)
    swap = {}
    for fam in fams:
        for i, n in enumerate(fam):
            swap.setdefault(n, fam[(i + 1) % len(fam)])
    return swap


def bump(text, delta):
    m = re.match(r"(0[xX])?([0-9a-fA-F]+)([uUlL]*)$", text)
    hexa, digits, suffix = m.groups()
    value = int(digits, 16 if hexa else 10) + delta
    if value < 0:
        return None
    body = (hexa + format(value, "X")) if hexa else str(value)
    return body + suffix


def matching_paren(toks, k):
    """Index of the token closing the parenthesis toks[k] opens, or None."""
    depth = 0
    for j in range(k, len(toks)):
        if toks[j][1] == "(":
            depth += 1
        elif toks[j][1] == ")":
            depth -= 1
            if depth == 0:
                return j
    return None


def is_statement_line(toks, prev_end):
    """A whole expression statement or assignment on this line alone."""
    if not toks or toks[-1][1] != ";" or prev_end not in (";", "{", "}", ")",
                                                          ":", "else"):
        return False
    first = toks[0]
    if first[0] == "ident":
        if first[1] in DECL_START or first[1] in SKIP_STATEMENT:
            return False
        nxt = toks[1][1] if len(toks) > 1 else ""
        if len(toks) > 1 and toks[1][0] == "ident":
            return False  # "type name": a declaration
        if nxt == "*" and len(toks) > 2 and toks[2][0] == "ident" and \
                len(toks) > 3 and toks[3][1] in ("=", ";", "[", ","):
            return False  # "type *name = ...": a declaration
    elif first[1] not in ("*", "(", "++", "--"):
        return False
    if [t for _, t, _ in toks[:3]] == ["(", "void", ")"] and len(toks) == 5:
        return False  # "(void)name;" only marks a parameter used
    depth = 0
    for _, t, _ in toks:
        depth += t == "("
        depth -= t == ")"
        if depth < 0:
            return False
    return depth == 0 and sum(1 for _, t, _ in toks if t == ";") == 1


def line_mutants(line, toks, swap, prev_end):
    """(op, description, mutated line) for every mutant of one code line."""
    out = []

    def at(tok, new):
        return line[:tok[2]] + new + line[tok[2] + len(tok[1]):]

    for k, tok in enumerate(toks):
        kind, text, _ = tok
        if kind == "punct" and text in ROR:
            for new in ROR[text]:
                out.append(("ror", f"{text} -> {new}", at(tok, new)))
        elif kind == "num":
            for delta in (1, -1):
                new = bump(text, delta)
                if new is not None:
                    out.append(("bound", f"{text} -> {new}", at(tok, new)))
        elif kind == "ident" and text in swap and swap[text] != text:
            nxt = toks[k + 1][1] if k + 1 < len(toks) else ""
            if nxt != "(" and toks[0][1] != "case":
                out.append(("swap", f"{text} -> {swap[text]}",
                            at(tok, swap[text])))
        elif kind == "ident" and text in ("if", "while") and \
                k + 1 < len(toks) and toks[k + 1][1] == "(":
            close = matching_paren(toks, k + 1)
            if close is not None and close > k + 2:
                a = toks[k + 1][2] + 1
                b = toks[close][2]
                cond = line[a:b]
                out.append(("neg", f"{text} (...) -> {text} (!(...))",
                            line[:a] + "!(" + cond + ")" + line[b:]))
    if is_statement_line(toks, prev_end):
        indent = line[:len(line) - len(line.lstrip())]
        out.append(("del", "statement -> (void)0;", indent + "(void)0;"))
    return out


def file_mutants(path, text, swap):
    """Every mutant of one source file, as dicts without ids."""
    result = []
    in_comment = False
    cond = []          # per #if level: is this branch compiled out?
    continued = False  # inside a multi-line preprocessor directive
    skip_parens = 0    # inside an unfinished PBX_ASSERT/_Static_assert
    prev_end = "{"
    for n, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if continued or (not in_comment and stripped.startswith("#")):
            continued = stripped.endswith("\\")
            d = re.match(r"#\s*(\w+)\s*(.*)", stripped)
            if d and not continued:
                word, arg = d.group(1), d.group(2)
                dead = arg.startswith("PBX_PLANT_") or arg == "0" or \
                    "defined(PBX_PLANT_" in arg.replace(" ", "")
                if word in ("if", "ifdef"):
                    cond.append(dead)
                elif word == "ifndef":
                    cond.append(False)
                elif word in ("else", "elif") and cond:
                    parent = cond[-1]
                    cond[-1] = not parent if word == "else" else False
                elif word == "endif" and cond:
                    cond.pop()
            continue
        toks, in_comment = tokenize(line, in_comment)
        if not toks:
            continue
        end = toks[-1][1]
        this_prev, prev_end = prev_end, end
        if any(cond):
            continue
        if skip_parens > 0 or any(t[1] in SKIP_STATEMENT for t in toks):
            depth = skip_parens
            for _, t, _ in toks:
                depth += (t == "(") - (t == ")")
            skip_parens = depth if depth > 0 else 0
            continue
        for op, desc, mutated in line_mutants(line, toks, swap, this_prev):
            result.append({"file": path, "line": n, "op": op, "desc": desc,
                           "orig": line, "mutated": mutated})
    return result


def all_mutants(root, dirs):
    swap = enum_families(root)
    mutants = []
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(root, d, "*.c"))):
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as f:
                mutants += file_mutants(rel, f.read(), swap)
    seen = {}
    for m in mutants:
        key = f"{m['file']}\0{m['orig'].strip()}\0{m['mutated'].strip()}"
        seen[key] = seen.get(key, 0) + 1
        m["id"] = hashlib.sha1(f"{key}\0{seen[key]}".encode()).hexdigest()[:12]
    return mutants


def sample(mutants, count, seed):
    """A fixed pseudo-random sample: the count lowest hashes of seed+id, so
    a mutant stays chosen while the code around it changes."""
    def rank(m):
        return hashlib.sha1(f"{seed}:{m['id']}".encode()).hexdigest()
    return sorted(sorted(mutants, key=rank)[:count],
                  key=lambda m: (m["file"], m["line"], m["id"]))


def load_equivalent(path):
    """Entries 'FILE | ID-or-mutated-line | reason' of the equivalence file."""
    entries = []
    if not path or not os.path.isfile(path):
        return entries
    for n, raw in enumerate(open(path, encoding="utf-8"), 1):
        raw = raw.rstrip("\n")
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in raw.split("|", 2)]
        if len(parts) != 3 or not parts[2]:
            sys.exit(f"{path}:{n}: expected 'FILE | ID or mutated line | "
                     "reason'")
        entries.append({"file": parts[0], "key": parts[1],
                        "reason": parts[2], "where": f"{path}:{n}"})
    return entries


def equivalent_of(m, entries):
    for e in entries:
        if e["file"] == m["file"] and e["key"] in (m["id"],
                                                   m["mutated"].strip()):
            return e
    return None

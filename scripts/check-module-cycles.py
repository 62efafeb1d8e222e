#!/usr/bin/env python3
"""Fails (exit 1) when the modules of a Rust crate depend on each other in a loop.

Usage: scripts/check-module-cycles.py CRATE_SRC_DIR [...]   e.g. legion-bridge/src

A module depends on another when its code names a path into it: `use crate::x::...`,
`crate::x::f(...)`, `super::...` or `self::...` (grouped imports `use crate::{a, b::c}` are
expanded). Comments and string literals do not count, nor do `mod` declarations. The crate
root (`lib.rs` / `main.rs`) is no node: it declares the modules and re-exports their items,
and a path to a re-exported item (`crate::Config`) counts as a path into the module that
item comes from.

Two graphs are checked:
- the crate's top-level modules, a directory module (`driver/` with `driver/mod.rs`, or
  `driver.rs` beside `driver/`) counting as one module for every edge from outside it;
- inside each directory module, its own file modules (`driver/mod.rs` as `driver` itself,
  `driver/regions.rs` as `driver::regions`, ...), from the edges among them.

Each set of modules that all reach each other is reported once, by one shortest cycle
through it (`cycle ...: a -> b -> a`, with where each edge is made) and, when the set is
larger, its members.
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_RE = re.compile(rf"(?<![A-Za-z0-9_:])(crate|super|self)((?:\s*::\s*{IDENT})+)")


def strip_comments_and_strings(text):
    """The text with comments, string and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 8]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}'), not a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def file_module(src, path):
    """The module path of a source file under `src`: x.rs and x/mod.rs -> [x]; lib.rs -> []."""
    rel = os.path.relpath(path, src)
    parts = rel[: -len(".rs")].split(os.sep)
    if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
        parts = parts[:-1]
    return parts


def expand_use(tree):
    """The paths of a `use` tree (`a::{b, c::{d, self}}` -> a::b, a::c::d, a::c)."""
    tree = re.sub(r"\s+", "", tree)
    depth, start = 0, None
    for k, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = k
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix = tree[:start]
                inner, rest = tree[start + 1:k], tree[k + 1:]
                items, d, last = [], 0, 0
                for m, c2 in enumerate(inner):
                    if c2 == "{":
                        d += 1
                    elif c2 == "}":
                        d -= 1
                    elif c2 == "," and d == 0:
                        items.append(inner[last:m])
                        last = m + 1
                items.append(inner[last:])
                paths = []
                for item in filter(None, items):
                    for p in expand_use(item + rest):
                        paths.append(prefix[:-2] if p == "self" else prefix + p)
                return paths
    tree = re.sub(r"\bas\w+$", "", tree)
    tree = re.sub(r"::\*$", "", tree)
    return [tree] if tree else []


def references(code):
    """(line, path) for every path in `code` (comments and strings already blanked) that
    starts at `crate`, `super` or `self`, `use` trees expanded."""
    refs = []
    uses = []
    for m in re.finditer(r"\buse\s+([^;]*);", code):
        line = code.count("\n", 0, m.start()) + 1
        for p in expand_use(m.group(1)):
            refs.append((line, p))
        uses.append((m.start(), m.end()))
    for m in PATH_RE.finditer(code):
        if any(a <= m.start() < b for a, b in uses):
            continue
        line = code.count("\n", 0, m.start()) + 1
        refs.append((line, m.group(1) + re.sub(r"\s+", "", m.group(2))))
    return refs


def inline_module_at(code):
    """A function giving, for an offset into `code`, the inline modules (`mod tests { ... }`)
    it lies in, outermost first."""
    spans = []
    for m in re.finditer(rf"\bmod\s+({IDENT})\s*\{{", code):
        depth, j = 1, m.end()
        while j < len(code) and depth:
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
            j += 1
        spans.append((m.start(), j, m.group(1)))

    def at_line(line):
        offset = 0
        for _ in range(line - 1):
            offset = code.find("\n", offset) + 1
        return [name for a, b, name in sorted(spans) if a <= offset < b]

    return at_line


def resolve(path, here):
    """The absolute module path (list) `path` names from module `here`, or None."""
    parts = path.split("::")
    head, rest = parts[0], parts[1:]
    if head == "crate":
        base = []
    elif head == "self":
        base = list(here)
    elif head == "super":
        base = list(here)
        while True:
            if not base:
                return None
            base = base[:-1]
            if rest and rest[0] == "super":
                rest = rest[1:]
                continue
            break
    else:
        return None
    return base + rest


def tangles(nodes, edges):
    """The sets of two or more nodes that all reach each other (strongly connected
    components, Tarjan's algorithm), each sorted, in sorted order."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(found)


def shortest_cycle(start, members, edges):
    """A shortest cycle through `start` within `members`, as a node list ending at `start`."""
    previous, frontier = {start: None}, [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(edges.get(v, {})):
                if w == start:
                    path = [v]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return list(reversed(path)) + [start]
                if w in members and w not in previous:
                    previous[w] = v
                    following.append(w)
        frontier = following
    return [start]


def check(src):
    files = []
    for root, _, names in os.walk(src):
        files += [os.path.join(root, f) for f in names if f.endswith(".rs")]
    modules = {tuple(file_module(src, f)): f for f in files}
    codes = {}
    for f in files:
        with open(f, encoding="utf-8") as fh:
            codes[f] = strip_comments_and_strings(fh.read())
    # What the crate root re-exports: name -> the module paths it comes from.
    reexports = {}
    for f in files:
        if file_module(src, f):
            continue
        for m in re.finditer(r"\bpub\s+use\s+([^;]*);", codes[f]):
            for p in expand_use(m.group(1)):
                name = p.split("::")[-1]
                target = p.split("::")[:-1]
                if target and target[0] in ("crate", "self"):
                    target = target[1:]
                reexports.setdefault(name, []).append(target)

    def module_of(abs_path):
        """The file modules an absolute path names a part of (the longest known prefix)."""
        if not abs_path:
            return []
        if len(abs_path) == 1 and abs_path[0] in reexports and (abs_path[0],) not in modules:
            return [tuple(t) for t in reexports[abs_path[0]]]
        for k in range(len(abs_path), 0, -1):
            if tuple(abs_path[:k]) in modules:
                return [tuple(abs_path[:k])]
        return []

    # Edges between file modules, with where each is made.
    edges = {}
    for f in files:
        here_file = tuple(file_module(src, f))
        if not here_file:
            continue
        code = codes[f]
        inline = inline_module_at(code)
        for line, path in references(code):
            here = list(here_file) + inline(line)
            target = resolve(path, here)
            if target is None:
                continue
            for to in module_of(target):
                if to and to != here_file:
                    where = f"{os.path.relpath(f)}:{line}"
                    edges.setdefault(here_file, {}).setdefault(to, where)

    def graph(key):
        """The graph of `key`-mapped nodes (None: not a node), and where each edge is made."""
        g = {}
        for a, targets in edges.items():
            for b, where in targets.items():
                ka, kb = key(a), key(b)
                if ka is not None and kb is not None and ka != kb:
                    g.setdefault(ka, {}).setdefault(kb, where)
        return g

    graphs = [("crate", graph(lambda m: m[0]))]
    directories = {m[:-1] for m in modules if len(m) > 1}
    for d in sorted(directories):
        def inside(m, d=d):
            return "::".join(m[: len(d) + 1]) if m[: len(d)] == d else None

        graphs.append(("::".join(d), graph(inside)))

    failed = False
    for name, g in graphs:
        nodes = set(g) | {b for t in g.values() for b in t}
        for members in tangles(nodes, g):
            failed = True
            cycle = shortest_cycle(members[0], set(members), g)
            print(f"{src}: cycle among the modules of {name}: {' -> '.join(cycle)}")
            for a, b in zip(cycle, cycle[1:]):
                print(f"    {a} -> {b} at {g[a][b]}")
            if len(members) > len(cycle) - 1:
                print(f"    (all in one loop: {', '.join(members)})")
    return not failed


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    ok = True
    for src in sys.argv[1:]:
        if not os.path.isdir(src):
            print(f"{src}: not a directory", file=sys.stderr)
            return 2
        ok = check(src) and ok
    if ok:
        print(f"module graphs acyclic: {' '.join(sys.argv[1:])}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

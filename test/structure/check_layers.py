#!/usr/bin/env python3
"""check_layers.py — the allocator's include graph against its layer map.

src/base.h declares the layers, lowest first, and the files of each (a
table in its header comment).  This test reads that table and fails when:
  - a file in src/ is in no layer, or in two;
  - a file includes a header of a higher layer (an upward include), or a
    header that is in no layer (other than system headers and the public
    include/mmalloc.h);
  - a layer's private header (NAME_parts.h) is included from another layer;
  - the headers include each other in a cycle.

usage: check_layers.py SRC_DIR     check the tree
       check_layers.py --self-test build small trees that break each rule and
                                   check that every one is caught
Exit status 0 when the tree is clean; each problem is one line on stderr.
"""
import os
import re
import sys
import tempfile

import structure_common

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
FILE = re.compile(r"\b[\w]+\.[ch]\b")
PUBLIC = {"mmalloc.h"}  # include/mmalloc.h: the public API, below nothing


def read_layers(base_h):
    """[(layer name, [files])] from the table in base.h's header comment."""
    text = open(base_h).read()
    start = text.index("The layers, lowest first")
    lines = text[start:].splitlines()[1:]
    layers = []
    in_table = False
    for line in lines:
        body = line.lstrip(" *").rstrip()
        row = line.startswith(" *   ")
        if not row:
            if in_table:
                break
            continue
        in_table = True
        body = re.sub(r"\([^)]*\)", " ", body)  # parenthesised remarks name no file
        m = re.match(r"([a-z][a-z ]*?)\s{2,}(.*)", body)
        if m and not FILE.fullmatch(m.group(1).strip()):
            layers.append((m.group(1).strip(), FILE.findall(m.group(2))))
        elif layers:  # a continuation line
            layers[-1][1].extend(FILE.findall(body))
    return layers


def check(src):
    """Problems found in the tree src, one string each."""
    problems = []
    layers = read_layers(os.path.join(src, "base.h"))
    if len(layers) < 2:
        return ["%s/base.h: no layer table found" % src]
    rank, layer_of = {}, {}
    for i, (name, files) in enumerate(layers):
        for f in files:
            if f in rank:
                problems.append("%s is in two layers (%s and %s)" % (f, layer_of[f], name))
            rank[f], layer_of[f] = i, name
    sources = sorted(f for f in os.listdir(src) if f.endswith((".c", ".h")))
    for f in sources:
        if f not in rank:
            problems.append("src/%s is in no layer of the map in src/base.h" % f)
    for f in rank:
        if f not in sources:
            problems.append("the layer map names %s, which is not in src/" % f)
    graph = {}
    for f in sources:
        if f not in rank:
            continue
        includes = INCLUDE.findall(open(os.path.join(src, f)).read())
        graph[f] = [h for h in includes if h in rank]
        for h in includes:
            if h in PUBLIC:
                continue
            if h not in rank:
                problems.append("src/%s includes %s, which is in no layer" % (f, h))
            elif rank[h] > rank[f]:
                problems.append("src/%s (layer %s) includes %s of a higher layer (%s)"
                                % (f, layer_of[f], h, layer_of[h]))
            elif h.endswith("_parts.h") and layer_of[h] != layer_of[f]:
                problems.append("src/%s (layer %s) includes %s, private to layer %s"
                                % (f, layer_of[f], h, layer_of[h]))
    problems.extend(cycles(graph))
    return problems


def cycles(graph):
    """One problem per include cycle among headers."""
    found, state = [], {}

    def visit(node, path):
        state[node] = 1
        for nxt in graph.get(node, []):
            if not nxt.endswith(".h"):
                continue
            if state.get(nxt) == 1:
                found.append("include cycle: %s" % " -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node.endswith(".h") and node not in state:
            visit(node, [node])
    return found


def self_test():
    """Each rule, broken on purpose in a small tree, must be caught."""
    table = (" * The layers, lowest first:\n *\n"
             " *   base   base.h\n"
             " *   low    low.h low_parts.h   low.c\n"
             " *   high   high.h              high.c\n *\n")
    cases = {
        "clean": ({}, None),
        "upward include": ({"low.c": '#include "high.h"\n'}, "higher layer"),
        "private header": ({"high.c": '#include "low_parts.h"\n'}, "private to layer"),
        "file in no layer": ({"stray.c": "\n"}, "in no layer"),
        "unknown header": ({"high.c": '#include "nowhere.h"\n'}, "in no layer"),
        "cycle": ({"low.h": '#include "low_parts.h"\n', "low_parts.h": '#include "low.h"\n'},
                  "include cycle"),
    }
    failures = 0
    for name, (files, want) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            base = {"base.h": "/*\n" + table + " */\n", "low.h": "", "low_parts.h": "",
                    "low.c": '#include "low.h"\n', "high.h": '#include "low.h"\n',
                    "high.c": '#include "high.h"\n'}
            base.update(files)
            for f, text in base.items():
                open(os.path.join(d, f), "w").write(text)
            failures += not structure_common.case_ok(name, check(d), want)
    return failures


if __name__ == "__main__":
    sys.exit(structure_common.main(
        "check_layers", __doc__, check, self_test,
        lambda src: "%d layers, every include goes down or across"
        % len(read_layers(os.path.join(src, "base.h")))))

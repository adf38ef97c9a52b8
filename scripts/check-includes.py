#!/usr/bin/env python3
"""Holds the tree to its header rules (issue #14): which headers each part may include.

  include/ndnic/   public: anyone may include these ("ndnic/nic.h").
  a library        (wire/, pmd_glue/, nic/, cm/, nd_frontend/, fabric/, telemetry/) includes its own
                   headers, the public ones, and the headers a lower library declares in its
                   meson.build as its interface to the layers above (`--layer LIB HEADER...`).
  tools/           programs: the public headers and the tools' own (tools/...), nothing else;
                   so are the programs of tests/interop/nd_peer (its own folder too).
  tests/, perf/    white-box: a component's tests and benchmarks may include its private
                   headers, so they are not checked here.

Usage: check-includes.py SOURCE_ROOT [--layer LIB HEADER...]...
Prints each violation as FILE:LINE: message, and exits 1 when there is any.
"""
import pathlib
import re
import sys

LIBRARIES = ('wire', 'pmd_glue', 'nic', 'cm', 'nd_frontend', 'fabric', 'telemetry')
PROGRAMS = ('tests/interop/nd_peer',)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SUFFIXES = ('.h', '.cc', '.cpp', '.c')


def parse_layers(args):
    """--layer LIB h1 h2 --layer LIB2 ... -> {LIB: {"LIB/h1", ...}}"""
    layers, lib = {}, None
    for a in args:
        if a == '--layer':
            lib = None
            continue
        if lib is None:
            lib = a
            layers.setdefault(lib, set())
            continue
        # meson passes files() as paths; keep "<lib>/<name>"
        layers[lib].add(lib + '/' + pathlib.Path(a).name)
    return layers


def part_of(rel):
    for prog in PROGRAMS:
        if rel.startswith(prog + '/'):
            return 'tool', prog
    top = rel.split('/', 1)[0]
    if top in LIBRARIES:
        return 'library', top
    if top == 'tools':
        return 'tool', top
    return None, None


def allowed(kind, owner, inc, layers):
    if inc.startswith('ndnic/'):
        return True
    if kind == 'tool':
        return inc.startswith(('tools/', owner + '/'))
    if inc.startswith(owner + '/'):
        return True
    lib = inc.split('/', 1)[0]
    return inc in layers.get(lib, set())


def main(argv):
    if len(argv) < 2:
        print(next(l for l in __doc__.splitlines() if l.startswith('Usage:')), file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1]).resolve()
    layers = parse_layers(argv[2:])
    bad = 0
    checked = 0
    for path in sorted(root.rglob('*')):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if rel.startswith(('build', '.')):  # build trees (build, build-asan) and dot folders
            continue
        kind, owner = part_of(rel)
        if kind is None:
            continue
        checked += 1
        for n, line in enumerate(path.read_text(errors='replace').splitlines(), 1):
            m = INCLUDE.match(line)
            if m and not allowed(kind, owner, m.group(1), layers):
                where = {'library': owner + '/ may include only its own headers, include/ndnic/ and '
                                    'the layer headers other libraries declare',
                         'tool': 'a program may include only include/ndnic/ and tools/'}[kind]
                print(f'{rel}:{n}: "{m.group(1)}" is private to its library: {where}')
                bad += 1
    if checked == 0:
        print(f'no sources found under {root}', file=sys.stderr)
        return 2
    print(f'include discipline: {checked} files checked, {bad} violations')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))

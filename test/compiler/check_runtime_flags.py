#!/usr/bin/env python3
"""Fails if a source of the runtime (runtime/, tools/llmrun/) is compiled with
LLVM's or MLIR's include directories or definitions.

The runtime never sees LLVM: it shares only runtime/include/llmserve/abi.h
with the compiler, and the compiler's targets carry LLVM's flags themselves.
Reads the build's compile_commands.json.
"""

import argparse
import json
import os
import shlex
import sys

RUNTIME_DIRS = ("runtime", os.path.join("tools", "llmrun"))
INCLUDE_FLAGS = ("-I", "-isystem", "-iquote", "-idirafter")


def flags(argv):
    """The include directories and definitions of one compile command."""
    includes, definitions = [], []
    args = iter(argv)
    for arg in args:
        if arg in INCLUDE_FLAGS:
            includes.append(next(args, ""))
        elif arg == "-D":
            definitions.append(next(args, ""))
        elif arg.startswith("-D"):
            definitions.append(arg[2:])
        else:
            for flag in INCLUDE_FLAGS:
                if arg.startswith(flag):
                    includes.append(arg[len(flag):])
                    break
    return includes, definitions


def under(path, dirs):
    path = os.path.realpath(path)
    return any(path == d or path.startswith(d + os.sep) for d in dirs)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("compile_commands")
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--llvm-include-dir", action="append", default=[])
    parser.add_argument("--llvm-definition", action="append", default=[])
    args = parser.parse_args()

    source_dir = os.path.realpath(args.source_dir)
    llvm_dirs = [os.path.realpath(d) for d in args.llvm_include_dir]
    with open(args.compile_commands) as f:
        commands = json.load(f)

    checked = {d: 0 for d in RUNTIME_DIRS}
    compiler_with_llvm = 0
    errors = []
    for entry in commands:
        path = os.path.join(entry["directory"], entry["file"])
        source = os.path.relpath(os.path.realpath(path), source_dir)
        argv = entry.get("arguments") or shlex.split(entry["command"])
        includes, definitions = flags(argv)
        leaked = [i for i in includes if under(i, llvm_dirs)]
        leaked += ["-D" + d for d in definitions if d in args.llvm_definition]
        if source.startswith("compiler" + os.sep) and leaked:
            compiler_with_llvm += 1
        for d in RUNTIME_DIRS:
            if source.startswith(d + os.sep):
                checked[d] += 1
                if leaked:
                    errors.append("%s: %s" % (source, " ".join(leaked)))

    # Guard against a check that sees nothing: the runtime's sources must be
    # there, and the compiler's must show the flags looked for.
    for d, n in checked.items():
        if n == 0:
            errors.append("no source under %s/ in %s" % (d, args.compile_commands))
    if compiler_with_llvm == 0:
        errors.append("no compiler source has LLVM's flags: the check is blind")
    for e in errors:
        print("error: " + e, file=sys.stderr)
    if errors:
        return 1
    print("%s sources of the runtime, none compiled with LLVM's flags"
          % " and ".join("%d %s/" % (n, d) for d, n in checked.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

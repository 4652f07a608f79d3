#!/usr/bin/env python3
"""The SDK's public API speaks only its own types: no public declaration of ClientSDK names a type of another module
of this package (SurveyWire's JSONValue, Messaging's Message, Transport's TransportClient, ...), so an app needs
`import ClientSDK` and nothing of ours besides.

    python3 scripts/sdk-api.py [--graphs DIR]

Emits ClientSDK's symbol graph (`swift package dump-symbol-graph --minimum-access-level public`, with the debug build
reused) unless --graphs names a directory that holds one (scripts/test passes the one `scripts/docs` has just
extracted, so the graph is not made twice), then reads every public symbol's declaration: each type it
names is identified by its USR, whose first component is the module that declares it. Types of the standard library,
Foundation and swift-log (`Logger`, the logging API of Swift on the server) are allowed; a type of any target under
Sources/ other than ClientSDK is reported as `MODULE.Type in Declaration.path` and fails the check (exit 1).
"""
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = "ClientSDK"


def module_of(usr):
    """`s:10SurveyWire9JSONValueO` → `SurveyWire` (Swift USRs start with the declaring module's length-prefixed name)."""
    match = re.match(r"s:(\d+)", usr)
    if not match:
        return None
    start = match.end()
    return usr[start:start + int(match.group(1))]


def graphs(directory):
    if directory is None:
        out = subprocess.run(["swift", "package", "dump-symbol-graph", "--minimum-access-level", "public"], cwd=ROOT,
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"sdk-api: dump-symbol-graph failed:\n{out.stderr[-2000:]}")
        found = re.search(r"Files written to (\S+)", out.stdout + out.stderr)
        directory = found.group(1) if found else os.path.join(ROOT, ".build", "symbolgraph")
    paths = glob.glob(os.path.join(directory, f"{MODULE}.symbols.json")) + glob.glob(os.path.join(directory, f"{MODULE}@*.symbols.json"))
    if not paths:
        sys.exit(f"sdk-api: no {MODULE} symbol graph in {directory}")
    return paths


def main():
    directory = sys.argv[sys.argv.index("--graphs") + 1] if "--graphs" in sys.argv else None
    ours = {name for name in os.listdir(os.path.join(ROOT, "Sources")) if name != MODULE}
    leaks, checked = [], 0
    for path in graphs(directory):
        for symbol in json.load(open(path, encoding="utf-8"))["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            checked += 1
            where = ".".join(symbol["pathComponents"])
            for fragment in symbol.get("declarationFragments", []):
                if fragment.get("kind") != "typeIdentifier":
                    continue
                module = module_of(fragment.get("preciseIdentifier", ""))
                if module in ours:
                    leaks.append(f"{module}.{fragment['spelling']} in {where}")
    for leak in sorted(set(leaks)):
        print(leak)
    print(f"sdk-api: {checked} public declarations of {MODULE}, {len(set(leaks))} naming another module's type of this package")
    sys.exit(1 if leaks else 0)


if __name__ == "__main__":
    main()

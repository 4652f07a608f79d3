#!/usr/bin/env python3
"""Every public declaration of the modules people program against has a doc comment.

    python3 scripts/doc-coverage.py [MODULE ...]    (default: ClientSDK SurveyWire TrioTesting TrioLoad)

Reads Sources/MODULE/**/*.swift and lists each `public` declaration (type, function, initializer, property,
subscript, typealias) whose line is not preceded by a `///` comment (attributes such as `@discardableResult` in
between are allowed) or a `*/` closing a block comment. `public extension` lines themselves need none: their
members are checked. Prints `PATH:LINE: declaration` for each miss and the counts; exits 1 on any miss.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODULES = ["ClientSDK", "SurveyWire", "TrioTesting", "TrioLoad"]
MODIFIERS = r"(?:static|class|final|mutating|nonmutating|nonisolated|convenience|required|override|indirect|lazy|dynamic)"
DECLARATION = re.compile(
    r"^(?:@[\w.]+(?:\([^)]*\))?\s+)*public\s+(?:" + MODIFIERS + r"\s+)*"
    r"(?:func|var|let|init|struct|enum|class|actor|protocol|typealias|subscript)\b"
)


def misses(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    found, missing = 0, []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not DECLARATION.match(text):
            continue
        found += 1
        before = number - 2
        while before >= 0 and lines[before].strip().startswith("@"):
            before -= 1
        previous = lines[before].strip() if before >= 0 else ""
        if not (previous.startswith("///") or previous.endswith("*/")):
            missing.append((number, text))
    return found, missing


def main():
    modules = sys.argv[1:] or DEFAULT_MODULES
    total, undocumented = 0, 0
    for module in modules:
        directory = os.path.join(ROOT, "Sources", module)
        if not os.path.isdir(directory):
            print(f"doc-coverage: no module {module} under Sources/", file=sys.stderr)
            return 2
        module_total, module_missing = 0, 0
        for folder, _, files in sorted(os.walk(directory)):
            for name in sorted(files):
                if not name.endswith(".swift"):
                    continue
                path = os.path.join(folder, name)
                found, missing = misses(path)
                module_total += found
                module_missing += len(missing)
                for number, text in missing:
                    print(f"{os.path.relpath(path, ROOT)}:{number}: undocumented public declaration: {text[:120]}")
        print(f"doc-coverage: {module}: {module_total - module_missing} of {module_total} public declarations documented")
        total += module_total
        undocumented += module_missing
    if undocumented:
        print(f"doc-coverage: {undocumented} public declarations lack a /// comment", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

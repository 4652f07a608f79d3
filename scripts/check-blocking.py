#!/usr/bin/env python3
"""Fails when a server module can block a thread it does not own (docs/ARCHITECTURE.md, "Never block a shared thread").

The servers' requests and tasks run on Swift's cooperative pool and on NIO's event loops, a few threads shared by
everything. A synchronous SQLite call there waits on GRDB's queues or reader-pool semaphore while holding the thread:
twenty phones deadlocked the mock server that way (both cooperative threads parked on the reader pool, whose holders
needed a cooperative thread to give the readers back). This check reads the sources of the server modules and refuses:

- a GRDB database access without `await` (`read`, `write`, `unsafeRead`, `unsafeReentrantRead`, `reentrantWrite`,
  `writeWithoutTransaction`, `barrierWriteWithoutTransaction`, `inDatabase`, `inTransaction`, `migrate`): the async
  forms wait on GRDB's own queues; the `async…` callback forms (`asyncWrite`) never wait;
- a semaphore, a group wait, a future's `.wait()`, `Thread.sleep`, `sleep`/`usleep`.

A line that runs only at start-up, before the server accepts a connection, may say so: `// startup-only: <why>` at the
end of the line or on the line above. A line that runs only on a serial dispatch queue the module made for that work
(the SQLite store's batched reads and group commits), never on a shared thread, says `// own-queue: <why>` the same way. Usage: `check-blocking.py [ROOT]`; `--self-test` checks that the check can fail.
"""
import re
import sys
from pathlib import Path

MODULES = ["Sources/MockServer", "Sources/PushRelay", "Sources/ServerSupport"]
GRDB_SYNC = re.compile(
    r"\b(?:try\s+)(?!await\b)[A-Za-z_][A-Za-z0-9_.!?()]*\.(read|write|unsafeRead|unsafeReentrantRead|reentrantWrite|"
    r"writeWithoutTransaction|barrierWriteWithoutTransaction|inDatabase|inTransaction|migrate)\s*[({]")
BLOCKING = re.compile(
    r"\bDispatchSemaphore\b|\bDispatchGroup\b|(?<!await )\b[A-Za-z_][A-Za-z0-9_]*\.wait\((?:timeout:[^)]*)?\)|"
    r"\bThread\.sleep\b|\busleep\(|(?<![A-Za-z_.])sleep\(")
MARKER = "// startup-only:"
OWN_QUEUE = "// own-queue:"


def strip_comment(line):
    """The code part of a line (a `//` outside a string literal starts a comment)."""
    in_string = False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            in_string = not in_string
        if not in_string and line.startswith("//", i):
            return line[:i]
    return line


def violations(path, text):
    found = []
    lines = text.splitlines()
    uses_grdb = "import GRDB" in text
    for number, line in enumerate(lines, 1):
        code = strip_comment(line)
        if not code.strip():
            continue
        allowed = any(mark in line or (number > 1 and mark in lines[number - 2]) for mark in (MARKER, OWN_QUEUE))
        if allowed:
            continue
        match = (GRDB_SYNC.search(code) if uses_grdb else None) or BLOCKING.search(code)
        if match:
            found.append(f"{path}:{number}: blocking call `{match.group(0).strip()}`: {line.strip()}")
    return found


def check(root):
    found = []
    for module in MODULES:
        for path in sorted((root / module).rglob("*.swift")):
            found += violations(path.relative_to(root), path.read_text())
    return found


def self_test():
    bad = 'import GRDB\nfunc f() throws { try writer.unsafeRead { db in 1 } }\nlet s = DispatchSemaphore(value: 0)\n'
    good = ('import GRDB\nfunc f() async throws { try await writer.unsafeRead { db in 1 } }\n'
            'func g() { queue.asyncWrite({ _ in }, completion: { _, _ in }) }\n'
            '// startup-only: before the server listens\ntry migrator.migrate(queue)\n'
            'queue.async { do { try writer.write { db in 1 } } catch {} }  // own-queue: the batcher queue\n')
    assert len(violations("bad.swift", bad)) == 2, violations("bad.swift", bad)
    assert violations("good.swift", good) == [], violations("good.swift", good)
    print("check-blocking: self-test passed (a synchronous read and a semaphore are caught; async forms pass)")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        sys.exit(0)
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    problems = check(root)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check-blocking: {len(problems)} blocking call(s) reachable from the servers' shared threads "
              f"(mark start-up-only code with '{MARKER} <why>', code on a queue of the module's own with '{OWN_QUEUE} <why>')", file=sys.stderr)
        sys.exit(1)
    print(f"check-blocking: no blocking call in {', '.join(MODULES)}")

#!/usr/bin/env python3
"""Fills the `--help` blocks of docs/cli.md from the built binaries, so the option lists there cannot drift.

    python3 scripts/docs-help.py [--check] [BIN_DIR]      (BIN_DIR default: .build/debug)

Each block sits between `<!-- help: COMMAND -->` and `<!-- /help -->`; `--check` exits 1 when one differs.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "cli.md"
BLOCK = re.compile(r"(<!-- help: (?P<command>[^>]+?) -->\n)(?P<body>.*?)(<!-- /help -->)", re.S)


def help_text(bin_dir, command):
    words = command.split()
    environment = dict(os.environ, COLUMNS="100")
    result = subprocess.run([str(Path(bin_dir) / words[0]), *words[1:], "--help"], capture_output=True, text=True,
                            env=environment, timeout=60)
    if result.returncode != 0:
        sys.exit(f"{command} --help exited {result.returncode}: {result.stderr}")
    return "```text\n" + result.stdout.rstrip() + "\n```\n"


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    bin_dir = args[0] if args else str(ROOT / ".build" / "debug")
    text = DOC.read_text()
    updated = BLOCK.sub(lambda m: m.group(1) + help_text(bin_dir, m.group("command")) + m.group(4), text)
    if "--check" in sys.argv:
        if updated != text:
            sys.exit("docs/cli.md: a --help block is out of date (run python3 scripts/docs-help.py)")
    else:
        DOC.write_text(updated)


if __name__ == "__main__":
    main()

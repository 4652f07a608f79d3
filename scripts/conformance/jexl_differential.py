#!/usr/bin/env python3
"""Random JEXL expressions through the trio's evaluator and another engine, and where the two disagree (issue 50).

    python3 scripts/conformance/jexl_differential.py --count 5000 --seed 1 \
        --reference "PATH/TO/jexl-eval-runner" [--survey-cli .build/debug/survey-cli] [--show 40]

Both engines read the same lines on standard input, one JSON object each, {"expression": "...", "context": {...}}, and
print one JSON object per line with "value" or "error" (`survey-cli messaging jexl --lines` is the trio's side). The
reference is whatever evaluates with Firefox's engine: jexl-eval 0.4.0 (mozilla/jexl-rs, the version Nimbus pins)
behind a 20-line Rust main that reads those lines, built where its crates are at hand; nothing of it is in this
repository. Values are compared as JSON with numbers compared as numbers (jexl-eval's are all f64); an error is
compared with an error by kind only (the two engines name their errors differently).

The expressions mix what targeting uses and what a lexer can trip on: numbers (`1.`, `.5`, `1.2.3`), strings with
either quote and escapes, true/false/null and their other cases, context attributes (defined, null, missing), member
and index access, arrays and objects, every binary operator, `in`, conditionals with and without parentheses. The
disagreements are printed grouped by what each engine gave; the exit status is 0 either way (this is a measuring
tool: rows worth keeping go into docs/conformance/jexl-eval-0.4.0.json, which the Swift tests check).
"""
import argparse
import json
import random
import shlex
import subprocess
import sys
from pathlib import Path

CONTEXT = {"days_since_update": None, "locale": "en-US", "version": 120, "list": [1, 2, 3], "obj": {"k": "v", "n": 2},
           "größe": 3, "zero": 0, "empty": "", "flag": True, "nested": {"inner": {"deep": [10, 20]}}, "pi": 3.5}
NAMES = ["days_since_update", "locale", "version", "list", "obj", "zero", "empty", "flag", "nested", "pi",
         "missing", "Null", "größe"]  # the last three are errors in jexl-eval, so they come less often
BINARY = ["+", "-", "*", "/", "//", "%", "^", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "in"]


class Generator:
    def __init__(self, rng):
        self.rng = rng

    def number(self):
        r = self.rng
        if r.random() < 0.05:  # what a lexer can trip on, now and then
            return r.choice([f"{r.randint(0, 9)}.", "1.2.3", "1e3", "007", "-1", "1.5e2"])
        return r.choice([str(r.randint(0, 20)), f"{r.randint(0, 9)}.{r.randint(0, 99)}", f".{r.randint(1, 9)}", "0",
                         str(r.randint(100, 10**6))])

    def string(self):
        r = self.rng
        body = r.choice(["a", "abc", "en-US", "", "v", "k", "1", "a b", "x'y", 'x"y', "\\n", "é", "a", "en-US", "k"])
        quote = r.choice(["'", '"'])
        return quote + body.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote

    def atom(self, depth):
        r = self.rng
        kind = r.randrange(9)
        if kind == 0:
            return self.number()
        if kind == 1:
            return self.string()
        if kind == 2:
            return r.choice(["true", "false", "null"] * 4 + ["Null", "NULL", "True"])
        if kind in (3, 4):
            return r.choice(NAMES) if r.random() < 0.2 else r.choice(NAMES[:-3])
        if kind == 5 and depth > 0:
            return "[" + ", ".join(self.expression(depth - 1) for _ in range(r.randint(0, 3))) + "]"
        if kind == 6 and depth > 0:
            keys = r.sample(["a", "b", "k", "'q'", '"w"'], r.randint(0, 2))
            return "{" + ", ".join(f"{k}: {self.expression(depth - 1)}" for k in keys) + "}"
        if kind == 7:
            base = r.choice(["obj", "nested", "list", "missing", "days_since_update", "locale"])
            return base + r.choice([".k", ".n", ".inner", ".inner.deep", ".length", "[0]", "[1]", "['k']", "[\"n\"]", ".missing", "[5]"])
        return self.number()

    def expression(self, depth=3):
        r = self.rng
        if depth <= 0:
            return self.atom(0)
        kind = r.randrange(10)
        if kind < 3:
            return self.atom(depth)
        if kind < 7:
            return f"{self.expression(depth - 1)} {r.choice(BINARY)} {self.expression(depth - 1)}"
        if kind == 7:
            return f"({self.expression(depth - 1)})"
        test = self.expression(depth - 1)
        if r.random() < 0.5:
            test = f"({test})"
        return f"{test} ? {self.expression(depth - 1)} : {self.expression(depth - 1)}"


def run(command, lines):
    result = subprocess.run(command, input="".join(json.dumps(line) + "\n" for line in lines), capture_output=True, text=True)
    out = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    if len(out) != len(lines):
        raise SystemExit(f"{command[0]} gave {len(out)} lines for {len(lines)} (exit {result.returncode}): {result.stderr[-500:]}")
    return out


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b if isinstance(a, bool) and isinstance(b, bool) else False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True, help="the other engine's command (reads and prints JSON lines)")
    parser.add_argument("--survey-cli", default=str(Path(__file__).resolve().parents[2] / ".build" / "debug" / "survey-cli"))
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=30, help="disagreements to print")
    parser.add_argument("--out", help="write every disagreement as JSON lines here")
    args = parser.parse_args()

    generator = Generator(random.Random(args.seed))
    seen, lines = set(), []
    while len(lines) < args.count:
        expression = generator.expression(generator.rng.randint(1, 4))
        if expression not in seen:
            seen.add(expression)
            lines.append({"expression": expression, "context": CONTEXT})
    ours = run([args.survey_cli, "messaging", "jexl", "--lines"], lines)
    theirs = run(shlex.split(args.reference), lines)
    differ = []
    for line, a, b in zip(lines, ours, theirs):
        if "error" in a and "error" in b:
            continue
        if "value" in a and "value" in b and same(a["value"], b["value"]):
            continue
        differ.append({"expression": line["expression"], "trio": a.get("value", {"error": a.get("error")}),
                       "reference": b.get("value", {"error": b.get("error")})})
    errors = sum(1 for b in theirs if "error" in b)
    print(f"{len(lines)} expressions (seed {args.seed}), {errors} errors in the reference's answers: {len(differ)} differ")
    for row in differ[:args.show]:
        print(f"  {row['expression']!r}: trio {json.dumps(row['trio'], ensure_ascii=False)}, "
              f"reference {json.dumps(row['reference'], ensure_ascii=False)}")
    if args.out:
        with open(args.out, "w") as out:
            for row in differ:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())

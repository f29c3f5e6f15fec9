#!/usr/bin/env python3
"""Rewrites the `--help` blocks of docs/CLI.md from the binaries' own output.

Usage: tools/cli-help.py [TARGET_DIR]   (default target/debug; build first with
`cargo build -p proofscope --features demo`). A fenced block whose text holds
`Usage: <bin> <sub>` is replaced by `<bin> <sub> --help`; tui/tests/help_in_docs.rs checks
that they agree."""
import re
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
target = Path(sys.argv[1]) if len(sys.argv) > 1 else root / "target" / "debug"
docs = root / "docs" / "CLI.md"
text = docs.read_text()


def help_of(bin_name, sub):
    args = [str(target / bin_name)] + ([sub] if sub else []) + ["--help"]
    # Not a terminal: clap wraps to COLUMNS, as the test renders them (100 columns).
    out = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                         env={"COLUMNS": "100"})
    return out.stdout.rstrip() + "\n"


def refresh(m):
    body = m.group(2)
    u = re.search(r"^Usage: (proofscope|prover)(?: ([a-z-]+))?", body, re.M)
    if not u:
        return m.group(0)
    sub = u.group(2)
    if sub in (None, "") or sub.isupper():
        sub = None
    return m.group(1) + help_of(u.group(1), sub) + m.group(3)


new = re.sub(r"(```text\n)(.*?)(```)", refresh, text, flags=re.S)
if new != text:
    docs.write_text(new)
    print("docs/CLI.md: help blocks refreshed")
else:
    print("docs/CLI.md: up to date")

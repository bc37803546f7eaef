"""Finishes the man pages swift-argument-parser's generate-manual plugin writes (`make man`).

    python3 man/finish.py IN_DIR OUT_DIR

Reads every syncagent*.1 in IN_DIR and writes a fixed copy of each to OUT_DIR (created if needed):

- A blank line (a paragraph break in a command's discussion) becomes `.Pp`: mdoc warns about empty
  input lines (`groff -mandoc -ww` printed "Empty input line #N" for every page). Never two `.Pp` in
  a row, none at the start of a section or item and none right before `.Sh`, `.Ss`, `.Bl`, `.It`,
  `.Bd`, `.Ed` or `.El` (those break the line themselves); the generator's own stray `.Pp` (one
  before an `.It`) goes the same way.
- A run of lines indented by two spaces or more (an example and its continuation lines) becomes a
  `.Bd -literal -offset indent` ... `.Ed` block, the common indentation removed and the relative
  indentation kept: filled as text, the lines ran together. A blank line between two indented lines
  stays inside the block.
- `Example: COMMAND` becomes the text `Example:` and COMMAND in a literal block (with any indented
  lines right after it, their indentation kept).
- syncagent.1 gains, before EXIT STATUS, a COMMANDS section (every subcommand page in IN_DIR but
  `help`, with the one-line description from its `.Nd`) and a FILES section (where the config file is
  looked for, what the state directory holds), and `syncagent.toml(5)` as the first SEE ALSO entry,
  so that `man syncagent` is enough to start.

The generated date (`.Dd`) is kept. Idempotent: finishing finished pages (or running twice into the
same OUT_DIR) gives the same bytes. Exits non-zero, naming the file, when IN_DIR has no syncagent.1
or a page is not what the generator writes.
"""

import glob
import os
import re
import sys

PROG = "man/finish.py"

# Macros that break the line and space themselves: a .Pp right before one of them is noise (and one
# right after a section or item heading too).
NO_PAR_BEFORE = re.compile(r"\.(Sh|Ss|Bl|It|Bd|Ed|El|Pp)\b")
NO_PAR_AFTER = re.compile(r"\.(Sh|Ss|Bl|It|Bd|Pp)\b")
LITERAL_START = ".Bd -literal -offset indent"


def fail(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(1)


def indented(line):
    return line.startswith("  ") and line.strip() != ""


def literal(lines):
    """lines (examples, indented) as a literal block, their common indentation removed."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    indent = min(len(l) - len(l.lstrip(" ")) for l in lines if l.strip())
    body = []
    for l in lines:
        l = l[indent:].rstrip() if l.strip() else ""
        # a line starting with '.' or "'" would be read as a request; backslashes come escaped (\e)
        if l.startswith((".", "'")):
            l = "\\&" + l
        body.append(l)
    return [LITERAL_START] + body + [".Ed"]


def indented_run(lines, i):
    """The indented lines from lines[i] on (blank lines between two of them included), and the index
    after them."""
    run = []
    while i < len(lines):
        if indented(lines[i]):
            run.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].strip() == "":
            j += 1
        if j > i and j < len(lines) and indented(lines[j]):
            run += [""] * (j - i)
            i = j
            continue
        break
    return run, i


def paragraphs_and_examples(lines, name):
    """Blank lines as paragraph marks, indented runs and `Example: ` commands as literal blocks.
    Lines already inside a .Bd ... .Ed (a finished page) pass through as they are."""
    out = []
    depth = 0  # inside .Bd blocks (ours from an earlier run, or the generator's)
    i = 0
    while i < len(lines):
        line = lines[i]
        if depth:
            if line.startswith(".Bd"):
                depth += 1
            elif line.startswith(".Ed"):
                depth -= 1
            out.append(line)
            i += 1
            continue
        if line.startswith(".Bd"):
            depth = 1
            out.append(line)
            i += 1
            continue
        if line.startswith(".Ed"):
            fail(f"{name}: .Ed without .Bd at line {i + 1}")
        if line.startswith("Example: ") and line[len("Example: "):].strip():
            run, i = indented_run(lines, i + 1)
            # the command starts the block's first column; indented lines after it (a continuation)
            # keep their indentation relative to it
            out += ["Example:"] + literal([line[len("Example: "):].strip()] + run)
            continue
        if indented(line):
            run, i = indented_run(lines, i)
            out += literal(run)
            continue
        if line.strip() == "":
            out.append(".Pp")
            i += 1
            continue
        out.append(line)
        i += 1
    if depth:
        fail(f"{name}: .Bd without .Ed")
    return tidy_paragraphs(out)


def tidy_paragraphs(lines):
    """Drops every .Pp that is not between two pieces of text (outside literal blocks)."""
    out = []
    depth = 0
    for k, line in enumerate(lines):
        if line.startswith(".Bd"):
            depth += 1
        elif line.startswith(".Ed"):
            depth -= 1
        if depth == 0 and line == ".Pp":
            prev = out[-1] if out else ""
            nxt = lines[k + 1] if k + 1 < len(lines) else ""
            if not out or not nxt or NO_PAR_AFTER.match(prev) or NO_PAR_BEFORE.match(nxt):
                continue
        out.append(line)
    return out


def description(path):
    """The one-line description (.Nd) of a page, as text."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith(".Nd "):
                text = line[4:].strip()
                if len(text) >= 2 and text[0] == text[-1] == '"':
                    text = text[1:-1].replace('""', '"')
                if text:
                    return "\\&" + text if text.startswith((".", "'")) else text
    fail(f"{path}: no .Nd line (the one-line description COMMANDS shows)")


def commands_section(in_dir):
    items = []
    for path in sorted(glob.glob(os.path.join(in_dir, "syncagent.*.1"))):
        command = os.path.basename(path)[len("syncagent."):-len(".1")]
        if command == "help":
            continue
        items += [".It Cm " + " ".join(command.split(".")), description(path)]
    if not items:
        fail(f"{in_dir}: no subcommand pages (syncagent.NAME.1) to list in COMMANDS")
    return [
        ".Sh COMMANDS",
        "Each command has a page of its own,",
        ".Xr syncagent.init 1",
        "for",
        ".Cm init",
        "and so on;",
        ".Nm syncagent Cm help Ar command",
        "prints its options.",
        ".Bl -tag -width Ds",
        *items,
        ".El",
    ]


FILES = [
    ".Sh FILES",
    ".Bl -tag -width Ds",
    ".It Pa ~/.config/syncagent/config.toml",
    "The config file, described in",
    ".Xr syncagent.toml 5 ;",
    ".Nm syncagent Cm init",
    "writes a commented one.",
    "Every command reads the first of:",
    ".Bl -enum -compact",
    ".It",
    "the file given with",
    ".Fl -config Ar file ;",
    ".It",
    "the file named by",
    ".Ev SYNCAGENT_CONFIG ;",
    ".It",
    ".Pa ./syncagent.toml ,",
    "when it exists;",
    ".It",
    ".Pa $XDG_CONFIG_HOME/syncagent/config.toml",
    ".Po",
    ".Ev XDG_CONFIG_HOME",
    "defaults to",
    ".Pa ~/.config",
    ".Pc .",
    ".El",
    ".It Pa ~/.local/state/syncagent/<device>/",
    "The state directory,",
    ".Pa $XDG_STATE_HOME/syncagent/<device>",
    ".Po",
    ".Ev XDG_STATE_HOME",
    "defaults to",
    ".Pa ~/.local/state",
    ".Pc",
    "unless the config file sets",
    ".Cm state .",
    "It must not be inside the data directory.",
    "It holds:",
    ".Bl -tag -width events.jsonl -compact",
    ".It Pa store.git",
    "the store, a plain git directory",
    ".Po",
    ".Ic git --git-dir=<state>/store.git log",
    "reads it",
    ".Pc ;",
    ".It Pa agent.lock",
    "held by the agent, or by a command that changes the store while no agent runs;",
    ".It Pa agent.sock",
    "the running agent's control socket (mode 0600);",
    ".It Pa events.jsonl",
    "the last 10,000 events",
    ".Pq Xr syncagent.events 1 ;",
    ".It Pa peers.json",
    "each peer's last sync, reachability and last error",
    ".Pq Xr syncagent.status 1 .",
    ".El",
    ".El",
]

SEE_ALSO_TOML = ".Xr syncagent.toml 5"


def finish_root(lines, in_dir, name):
    """COMMANDS and FILES before EXIT STATUS (replacing those of an earlier run), syncagent.toml(5)
    first in SEE ALSO."""
    def heading(line):
        m = re.match(r'\.Sh\s+"?([^"]*?)"?\s*$', line)
        return m.group(1) if m else None

    kept = []
    skipping = False
    for line in lines:
        h = heading(line)
        if h is not None:
            skipping = h in ("COMMANDS", "FILES")
        if not skipping:
            kept.append(line)

    exit_at = [k for k, l in enumerate(kept) if heading(l) == "EXIT STATUS"]
    if not exit_at:
        fail(f'{name}: no .Sh "EXIT STATUS" to put COMMANDS and FILES before')
    k = exit_at[0]
    kept[k:k] = commands_section(in_dir) + FILES

    see = [k for k, l in enumerate(kept) if heading(l) == "SEE ALSO"]
    if not see:
        return kept + ['.Sh "SEE ALSO"', SEE_ALSO_TOML]
    k = see[0] + 1
    if k < len(kept) and kept[k].startswith(SEE_ALSO_TOML):
        return kept
    more = k < len(kept) and kept[k].startswith(".Xr ")
    kept.insert(k, SEE_ALSO_TOML + (" ," if more else ""))
    return kept


def main():
    if len(sys.argv) != 3:
        fail("usage: python3 man/finish.py IN_DIR OUT_DIR")
    in_dir, out_dir = sys.argv[1], sys.argv[2]
    root = os.path.join(in_dir, "syncagent.1")
    if not os.path.isfile(root):
        fail(f"{root}: no such file (did generate-manual run? IN_DIR must hold its pages)")

    pages = {}
    for path in sorted(glob.glob(os.path.join(in_dir, "syncagent*.1"))):
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not any(l.startswith(".Dd") for l in lines):
            fail(f"{path}: no .Dd line; not an mdoc page")
        lines = paragraphs_and_examples(lines, path)
        if name == "syncagent.1":
            lines = finish_root(lines, in_dir, path)
        pages[name] = "\n".join(lines) + "\n"

    os.makedirs(out_dir, exist_ok=True)
    for name, text in pages.items():
        target = os.path.join(out_dir, name)
        tmp = target + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)


if __name__ == "__main__":
    main()

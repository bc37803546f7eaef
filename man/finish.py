"""`make man`: finishes the pages swift-argument-parser's generate-manual plugin writes.

    python3 man/finish.py IN_DIR OUT_DIR

- A blank line (a paragraph break in a command's discussion) becomes `.Pp`: mdoc warns on empty
  input lines (`groff -mandoc -ww` printed "Empty input line" for every page).
- Lines indented by two spaces or more (the examples), and the command after `Example: `, go into
  `.Bd -literal -offset indent` blocks: filled as text they ran into one line.
- `syncagent.1` gains a COMMANDS section (each subcommand with its one-line description, from its own
  page), a FILES section (where the config file and the state live) and `syncagent.toml(5)` first
  in SEE ALSO, so that `man syncagent` is enough to start.

Idempotent; the date the plugin wrote is kept.
"""

import os
import re
import sys


def fail(msg):
    print(f"man/finish.py: {msg}", file=sys.stderr)
    sys.exit(1)


def literal(lines):
    """lines (indented by 2+ spaces) as a literal block, the common indentation removed."""
    indent = min(len(l) - len(l.lstrip(" ")) for l in lines if l.strip())
    body = [l[indent:] for l in lines]  # backslashes come escaped (\e) from the generator
    # a line starting with '.' or "'" would be read as a request
    body = ["\\&" + l if l.startswith((".", "'")) else l for l in body]
    return [".Bd -literal -offset indent"] + body + [".Ed"]


def finish_lines(lines):
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("Example: ") and not line.startswith("."):
            out += ["Example:"] + literal(["  " + line[len("Example: "):]])
            i += 1
            continue
        if line.startswith("  ") and line.strip():
            block = []
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += literal(block)
            continue
        if line.strip() == "":
            i += 1
            nxt = lines[i] if i < len(lines) else ""
            # no paragraph break before a section, list, item or block end, nor twice
            if out and out[-1] not in (".Pp",) and not re.match(r"\.(Sh|Ss|Bl|It|Ed|El)\b", nxt) and nxt.strip():
                out.append(".Pp")
            continue
        out.append(line)
        i += 1
    return out


def commands_section(in_dir):
    items = []
    for name in sorted(os.listdir(in_dir)):
        m = re.fullmatch(r"syncagent\.(.+)\.1", name)
        if not m or m.group(1) == "help":
            continue
        desc = ""
        with open(os.path.join(in_dir, name)) as f:
            for l in f:
                if l.startswith(".Nd "):
                    desc = l[4:].strip().strip('"')
                    break
        items += [f".It Cm {m.group(1)}", f"{desc} See", f".Xr syncagent.{m.group(1)} 1 ."]
    if not items:
        fail(f"{in_dir}: no subcommand pages (syncagent.NAME.1)")
    return [".Sh COMMANDS", ".Bl -tag -width Ds"] + items + [".El"]


FILES = [
    ".Sh FILES",
    ".Bl -tag -width Ds",
    ".It Pa ~/.config/syncagent/config.toml",
    "The config file, found at",
    ".Fl -config Ar file ,",
    "else",
    ".Ev SYNCAGENT_CONFIG ,",
    "else",
    ".Pa ./syncagent.toml ,",
    "else",
    ".Pa $XDG_CONFIG_HOME/syncagent/config.toml .",
    ".Nm syncagent Cm init",
    "writes a commented one; every key is in",
    ".Xr syncagent.toml 5 .",
    ".It Pa ~/.local/state/syncagent/<device>/",
    "The state directory",
    ".Pq Ev XDG_STATE_HOME Ns /syncagent/ Ns Ar device :",
    ".Pa store.git",
    "(the git store; plain",
    ".Ic git --git-dir",
    "reads it),",
    ".Pa agent.lock ,",
    ".Pa agent.sock ,",
    ".Pa events.jsonl ,",
    ".Pa peers.json .",
    "It must not be inside the data directory.",
    ".El",
]


def finish_root(lines, in_dir):
    if any(l == ".Sh COMMANDS" for l in lines):
        return lines  # already finished
    out = []
    for l in lines:
        if l == '.Sh "EXIT STATUS"':
            out += commands_section(in_dir) + FILES
        if l == '.Sh "SEE ALSO"':
            out.append(l)
            out.append(".Xr syncagent.toml 5 ,")
            continue
        out.append(l)
    return out


def main():
    if len(sys.argv) != 3:
        fail("usage: python3 man/finish.py IN_DIR OUT_DIR")
    in_dir, out_dir = sys.argv[1], sys.argv[2]
    if not os.path.isfile(os.path.join(in_dir, "syncagent.1")):
        fail(f"{in_dir}: no syncagent.1 (did generate-manual run?)")
    os.makedirs(out_dir, exist_ok=True)
    for name in sorted(os.listdir(in_dir)):
        if not re.fullmatch(r"syncagent(\..+)?\.1", name):
            continue
        with open(os.path.join(in_dir, name)) as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not any(l.startswith(".Bd -literal") for l in lines):
            lines = finish_lines(lines)
        if name == "syncagent.1":
            lines = finish_root(lines, in_dir)
        with open(os.path.join(out_dir, name), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# The layers docs/ARCHITECTURE.md states, as the package graph and the imports hold them:
# C libraries -> ObjectStorage (our own object and pack storage in git's formats: zlib, libdeflate,
# OpenSSL, never libgit2) -> Git (the only module that touches libgit2) -> SyncCore (imports Git internally: no
# libgit2 or Git type in its API) -> Agent -> CLI and SyncAgentKit, none of which reach Git. Byte
# paths (FilePath(bytes:), precedesInBytes, sortedInBytes, display) live in FileSystem. And the top
# of the checkout holds only what belongs there.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Who imports the libgit2 binding and the C module.
bad=$(grep -rlE '^(@_exported |public |internal |@preconcurrency )?import CLibgit2$' Sources | grep -v '^Sources/Git/' || true)
[ -z "$bad" ] || fail "only Sources/Git may import CLibgit2; also: $bad"
bad=$(grep -rlE '^(@_exported |public |internal |@preconcurrency )?import (Git|CLibgit2)$' Sources/ObjectStorage || true)
[ -z "$bad" ] || fail "ObjectStorage knows nothing of libgit2: $bad"
bad=$(grep -rlE '^(@_exported |public |internal |@preconcurrency )?import CCompression$' Sources | grep -vE '^Sources/(ObjectStorage|Git)/' || true)
[ -z "$bad" ] || fail "only ObjectStorage and Git use zlib, libdeflate and OpenSSL directly: $bad"
bad=$(grep -rlE '^(@_exported |public |internal |@preconcurrency )?import (Git|ObjectStorage)$' Sources | grep -vE '^Sources/(Git|SyncCore|ObjectStorage)/' || true)
[ -z "$bad" ] || fail "only SyncCore may import Git (the CLI, Agent and SyncAgentKit go through SyncCore): $bad"
bad=$(grep -rlE '^(@_exported |public |@preconcurrency )?import Git$' Sources/SyncCore || true)
[ -z "$bad" ] || fail "SyncCore imports Git internally only (internal import Git), so no Git type leaks into its API: $bad"
# Foundation stays out of the agent (it costs ~8 MB resident); FoundationEssentials is fine.
# The web page's program (WebUI, syncagent-web) is a process of its own and may use Foundation.
bad=$(grep -rlE '^(public |internal |@preconcurrency )?import Foundation$' Sources | grep -vE '^Sources/(SyncCore/Config|WebUI|syncagent-web)/' || true)
[ -z "$bad" ] || fail "Foundation is imported only by the config parser (TOMLKit needs it) and the web page's program: $bad"
bad=$(grep -rlE '^(public |internal |@preconcurrency )?import (FlyingFox|FlyingSocks|WebUI)$' Sources | grep -vE '^Sources/(WebUI|syncagent-web)/' || true)
[ -z "$bad" ] || fail "only the web page's program serves HTTP (the agent serves none): $bad"

# The package graph: which targets name Git as a dependency.
python3 - Package.swift <<'PY' || fail "Package.swift's graph breaks the layers (see above)"
import re, sys
text = open(sys.argv[1]).read()
deps = {}
for m in re.finditer(r'\.(?:target|executableTarget|testTarget)\(\s*name:\s*"([^"]+)"(.*?)\n        \)', text, re.S):
    name, body = m.group(1), m.group(2)
    d = re.search(r'dependencies:\s*\[(.*?)\]\s*[,)\n]', body, re.S)
    deps[name] = set(re.findall(r'"([^"]+)"', d.group(1))) if d else set()
bad = [n for n in ("Agent", "syncagent", "SyncAgentKit", "Watcher", "FileSystem", "Platform")
       if n in deps and {"Git", "ObjectStorage"} & deps[n]]
if "ObjectStorage" in deps and ({"Git", "CLibgit2", "SyncCore"} & deps["ObjectStorage"]):
    print("ObjectStorage depends on %s" % deps["ObjectStorage"]); sys.exit(1)
if bad:
    print("targets that must not depend on Git do: %s" % ", ".join(bad)); sys.exit(1)
web = [n for n in ("Agent", "syncagent", "SyncAgentKit", "SyncCore") if n in deps and {"WebUI", "FlyingFox"} & deps[n]]
if web:
    print("the agent's targets must not link the web page's HTTP server: %s" % ", ".join(web)); sys.exit(1)
if "FileSystem" in deps and ({"Git", "SyncCore"} & deps["FileSystem"]):
    print("FileSystem depends on %s" % deps["FileSystem"]); sys.exit(1)
missing = [n for n in ("Agent", "syncagent", "SyncAgentKit", "Git", "ObjectStorage", "SyncCore", "FileSystem") if n not in deps]
if missing:
    print("Package.swift: could not read the targets %s" % missing); sys.exit(1)
PY

# Byte paths are FileSystem's.
for sym in 'init(bytes: [UInt8])' 'func precedesInBytes' 'func sortedInBytes' 'var display: String'; do
    where=$(grep -rlF "$sym" Sources | sort | tr '\n' ' ' || true)
    case "$where" in
        "Sources/FileSystem/"*" ") [ "$(echo $where | wc -w)" = 1 ] || fail "$sym is defined more than once: $where" ;;
        *) fail "$sym is defined outside Sources/FileSystem: $where" ;;
    esac
done

# The top of the checkout: only what belongs there (git ls-files, so build output does not count).
top=$(git ls-files | cut -d/ -f1 | sort -u | tr '\n' ' ')
for entry in $top; do
    case "$entry" in
        .ci|.gitignore|Makefile|Package.swift|README.md|Samples|Sources|Tests|bench|docs|e2e|man) ;;
        *) fail "a stray top-level entry in git: $entry (top level: $top)" ;;
    esac
done
log "layers hold: ObjectStorage without libgit2, only SyncCore imports Git (internally), byte paths in FileSystem, top level: $top"
log "ok"

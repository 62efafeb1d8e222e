#!/usr/bin/env bash
# Fails (exit 1) when a tracked text file refers to a path the repository does not have, or to
# anything outside the repository. Each finding is printed as `file:line: missing PATH`.
#
# What counts as a reference:
# - a path rooted at a top-level directory of the repository (`ir/src/mlir.rs`,
#   `./scripts/demo.sh`, `benches/peers/`): a last component with an extension, or a trailing
#   slash;
#   bare words such as `runtime/backend` are prose, not paths;
# - an upper-case document name with no directory (`ARCHITECTURE.md`), and the target of a
#   relative Markdown link in a `.md` file;
# - a relative path starting with `../` (`include_str!("../README.md")`).
# A reference resolves when it names a file or directory relative to the repository root, to
# any directory above the referencing file (crate-relative paths such as `src/lib.rs` in a
# crate's files) or, in a shell script, to a directory the same command `cd`s into. `{a,b}` alternatives are expanded; `*`, `%`, `<...>`, `{name}` and
# `$VAR` are wildcards that must match at least one existing path. A path that climbs out
# of the repository is always a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import fnmatch
import posixpath
import re
import subprocess
import sys


def git_files(*args):
    out = subprocess.run(["git", "ls-files", "-z", *args], check=True, capture_output=True).stdout
    return [p.decode() for p in out.split(b"\0") if p]


deleted = set(git_files("--deleted"))
# Scanned: the tracked files. Existing: the tracked files and the new ones not yet added (so a
# file and the document naming it can be written in either order), less those deleted.
scanned = [p for p in git_files("--cached") if p not in deleted]
existing_files = (set(scanned) | set(git_files("--others", "--exclude-standard"))) - deleted
existing_dirs = {""}
for path in existing_files:
    parts = path.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        existing_dirs.add("/".join(parts[:i]))

# Roots: every top-level directory of the tree, and the crate and folder names the documents
# use even while one is absent (a reference to a removed crate must still be caught).
roots = {p.split("/")[0] for p in existing_files if "/" in p}
roots |= {
    "src", "runtime", "embedded", "machine", "backend", "scripts", "docs", "tests", "libs",
    "python", "benches", "examples", "figures", "ir", "jit", "mapper", "fusion", "legion-bridge",
}
root_alt = "|".join(re.escape(r) for r in sorted(roots, key=len, reverse=True))

# Generated at run time, never tracked: named by documents and scripts on purpose. (Paths
# under target/ or ~/.cache are not rooted at a repository directory and are never checked.)
ALLOWED = set()

BEFORE = r"(?<![\w./\-~$@:])"
PATH_CHARS = r"(?:[\w.\-/*%$+]|\{[^{}\s]*\}|<[^<>\s/]*>)"
ROOTED = re.compile(BEFORE + r"(?:\./)?((?:" + root_alt + r")/" + PATH_CHARS + r"*)")
PARENT = re.compile(BEFORE + r"((?:\.\./)+" + PATH_CHARS + r"+)")
BARE_MD = re.compile(BEFORE + r"([A-Z][A-Z0-9_\-]+\.md)(?![\w/\-])")
MD_LINK = re.compile(r"\]\(([^()\s#]+)(?:#[^()\s]*)?\)")
CD = re.compile(r"\bcd\s+([\w.\-/]+)")
OUTSIDE = re.compile(re.escape("..") + r"/+" + "shared")
EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]*$")
WILDCARD = re.compile(r"\{[^{},]*\}|<[^<>]*>|\$\w+|[*%]")


def expand(token):
    """`a.{svg,md}` -> [`a.svg`, `a.md`]; wildcards stay."""
    m = re.search(r"\{([^{}]*,[^{}]*)\}", token)
    if not m:
        return [token]
    return [x for alt in m.group(1).split(",") for x in expand(token[: m.start()] + alt + token[m.end():])]


def is_path(token):
    return token.endswith("/") or EXTENSION.search(token.rsplit("/", 1)[-1]) is not None


def exists(path):
    path = path.rstrip("/") if path != "/" else path
    if WILDCARD.search(path):
        pattern = WILDCARD.sub("*", path)
        return any(fnmatch.fnmatchcase(p, pattern) for p in existing_files | existing_dirs)
    return path in existing_files or path in existing_dirs


def resolves(token, source, extra_bases=()):
    """Whether `token` names an existing path relative to the root, to a directory above
    `source`, or to one of `extra_bases`."""
    for base in extra_bases:
        if exists(posixpath.normpath(posixpath.join(base, token))):
            return True
    base = posixpath.dirname(source)
    while True:
        candidate = posixpath.normpath(posixpath.join(base, token)) + ("/" if token.endswith("/") else "")
        if exists(candidate):
            return True
        if not base:
            return False
        base = posixpath.dirname(base)


def tidy(token):
    return token.rstrip(".,;:")


findings = []
for source in scanned:
    try:
        data = open(source, "rb").read()
    except OSError:
        continue
    if b"\0" in data[:8192]:
        continue
    text = data.decode("utf-8", errors="replace")
    shell = source.endswith(".sh")
    lines = text.splitlines()
    # Directories a shell command `cd`s into, for every physical line of that command.
    cd_bases = [()] * len(lines)
    if shell:
        start = 0
        for i, line in enumerate(lines):
            if not line.endswith("\\"):
                command = "\n".join(lines[start : i + 1])
                bases = tuple(CD.findall(command))
                for j in range(start, i + 1):
                    cd_bases[j] = bases
                start = i + 1
    for number, line in enumerate(lines, 1):
        where = f"{source}:{number}"
        if OUTSIDE.search(line):
            findings.append(f"{where}: outside the repository: {OUTSIDE.search(line).group(0)}")
        for m in PARENT.finditer(line):
            token = tidy(m.group(1))
            if OUTSIDE.match(token):
                continue
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(source), token))
            if resolved == ".." or resolved.startswith("../"):
                findings.append(f"{where}: outside the repository: {token}")
            elif is_path(token) and not any(exists(p) for p in expand(resolved)):
                findings.append(f"{where}: missing {token}")
        for m in ROOTED.finditer(line):
            token = tidy(m.group(1))
            for path in expand(token):
                if is_path(path) and path not in ALLOWED and not resolves(path, source, cd_bases[number - 1]):
                    findings.append(f"{where}: missing {path}")
        for m in BARE_MD.finditer(line):
            token = m.group(1)
            if token not in ALLOWED and not resolves(token, source):
                findings.append(f"{where}: missing {token}")
        if source.endswith(".md"):
            for m in MD_LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.\-]*:", target) or target.startswith(("/", "../")):
                    continue  # URLs; `../` links are checked above
                if not resolves(tidy(target), source):
                    findings.append(f"{where}: missing {target}")

for finding in findings:
    print(finding)
sys.stdout.flush()
if findings:
    print(f"check-references: {len(findings)} reference(s) to paths the repository does not have", file=sys.stderr)
    sys.exit(1)
PY

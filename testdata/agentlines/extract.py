#!/usr/bin/env python3
"""Extract shell command lines issued by AI coding agents from public
trajectory files held in git snapshots, and write lines.jsonl.

Usage:
    python3 extract.py MIRROR_ROOT OUT_JSONL [--stats]

MIRROR_ROOT holds one git directory per source repository, named
"<owner>+<name>/repo" (or "<owner>+<name>", a bare or non-bare clone).
Each source below is pinned to a commit; files are read with `git show`
/ `git cat-file`, never from a work tree.

Output: one JSON object per line {"agent", "source", "line"}; exact
duplicate lines are dropped within each agent (the first kept).
See SOURCES.md for what each source is and how it is read.
"""

import json
import math
import os
import re
import subprocess
import sys
from collections import Counter, OrderedDict

# ---------------------------------------------------------------------------
# Sources.  kind selects the parser; paths is a regex on the file path;
# "history": True means: every matching path reachable from `commit`, each
# at the last version it had in that history (for files that were later
# deleted from the tree).
# ---------------------------------------------------------------------------
SOURCES = [
    dict(id="mswea-gemini3pro-swebv", repo="gruckion/mini-swe-agent",
         commit="d12a71affd95403b036b2bdbd827349b77bfffb9",
         kind="mini_swe_traj", agent="mini-swe-agent",
         paths=r"^swebench_results/.*\.traj\.json$"),
    dict(id="sweagent-demos", repo="SWE-agent/SWE-agent",
         commit="3ea751c087f32b16e039a2233dd6eefecef325d5",
         kind="swe_agent_traj", agent="swe-agent",
         # human_thought__* demonstrations have hand-written actions: skipped
         paths=r"^(?!.*human_thought).*\.traj$"),
    dict(id="openhands-runtime-trajs", repo="All-Hands-AI/OpenHands",
         commit="156d0686c46aafb0fa9d291da6421fb6f64dddc0",
         kind="openhands_events", agent="openhands",
         paths=r"^tests/runtime/trajs/.*\.json$"),
]
# SpecStory (.specstory/history/*.md) sources are appended from
# SPECSTORY_SOURCES: (id, repo, commit)
# SPECSTORY_SOURCES: (id, repo, commit, words naming the repository's
# author; a line containing one of them is dropped)
SPECSTORY_SOURCES = [
    ("specstory-minsky", "edobry/minsky",
     "39b37d6cf616d018e42fb69eef4e3b349aa2966d", ["edobry", "dobry", "eugene"]),
    ("specstory-chef-chopsky", "daviswhitehead/chef-chopsky",
     "513a7ef9bbc8caf3905813c63888933a8c2bfe97",
     ["davis", "whitehead", "daviswhitehead", "daviswhiteheads"]),
    ("specstory-munsellspace", "ChrisGVE/MunsellSpace",
     "3863ef289dd69bbc59cd3a761bd8c9e281f01bd4", ["chris", "chrisgve"]),
    ("specstory-barqly-vault", "Barqly/barqly-vault",
     "1d9c89d1a05b906dbc574c5df57a68390f63dbde", []),
]
for _id, _repo, _commit, _words in SPECSTORY_SOURCES:
    SOURCES.append(dict(id=_id, repo=_repo, commit=_commit, kind="specstory",
                        agent=None, paths=r"^\.specstory/history/.*\.md$",
                        history=True, drop_words=_words))


# ---------------------------------------------------------------------------
# git helpers
# ---------------------------------------------------------------------------
def gitdir_for(root, repo):
    base = os.path.join(root, repo.replace("/", "+"))
    for cand in (os.path.join(base, "repo"), base):
        if os.path.isdir(cand):
            return cand
    raise SystemExit("no git directory for %s under %s" % (repo, root))


def git(gd, *args):
    return subprocess.run(["git", "--git-dir=" + gd] + list(args),
                          check=True, capture_output=True).stdout


def list_files(gd, commit, pat):
    rx = re.compile(pat)
    out = git(gd, "ls-tree", "-r", "-z", "--name-only", commit)
    return [(commit, p) for p in sorted(out.decode("utf-8", "replace").split("\0"))
            if p and rx.search(p)]


def list_history_files(gd, commit, pat):
    """Every path matching pat ever present in the history of commit, each
    at the newest commit in which it existed (added or modified; for a path
    whose newest event is a deletion, the parent of that commit)."""
    rx = re.compile(pat)
    out = subprocess.run(
        ["git", "--git-dir=" + gd, "-c", "core.quotePath=false", "log",
         "--format=C\t%H", "--name-status", "--no-renames", commit],
        check=True, capture_output=True).stdout.decode("utf-8", "replace")
    seen = OrderedDict()
    cur = None
    for ln in out.split("\n"):
        if not ln:
            continue
        parts = ln.split("\t")
        if parts[0] == "C" and len(parts) == 2:
            cur = parts[1]
            continue
        if len(parts) == 2 and parts[0] in ("A", "M", "D", "T"):
            status, path = parts
            if rx.search(path) and path not in seen:
                seen[path] = cur + "^" if status == "D" else cur
    return sorted(((c, p) for p, c in seen.items()), key=lambda x: x[1])


def read_blob(gd, commit, path):
    return git(gd, "show", "%s:%s" % (commit, path))


# ---------------------------------------------------------------------------
# parsers: each yields (agent, line)
# ---------------------------------------------------------------------------
MSWEA_RX = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)


def parse_mini_swe_traj(data, src):
    d = json.loads(data)
    for m in d.get("messages", []):
        if m.get("role") != "assistant":
            continue
        c = m.get("content")
        if isinstance(c, list):
            c = "".join(x.get("text", "") for x in c if isinstance(x, dict))
        if not isinstance(c, str):
            continue
        acts = MSWEA_RX.findall(c)
        # mini-swe-agent executes a response only if it has exactly one block
        if len(acts) == 1:
            yield src["agent"], acts[0].strip()


SWE_AGENT_SPECIAL = {
    "open", "goto", "scroll_up", "scroll_down", "edit", "create", "search_file",
    "search_dir", "find_file", "submit", "str_replace_editor", "insert",
    "set_cursors", "append", "filemap", "exit_cost", "exit_context",
    "exit_api", "exit_format", "exit_error", "exit_forfeit", "skip",
    "decompile", "disassemble", "debug_start", "debug_add_breakpoint",
    "debug_continue", "debug_step", "debug_exec", "debug_stop",
    "connect_start", "connect_sendline", "connect_exec", "connect_stop",
    "review_on_submit_m", "forfeit", "view_image", "str_replace_based_edit_tool",
}


def parse_swe_agent_traj(data, src):
    d = json.loads(data)
    for step in d.get("trajectory", []) or []:
        a = step.get("action")
        if not isinstance(a, str):
            continue
        a = a.strip("\n")
        if not a.strip():
            continue
        first = a.split(None, 1)[0]
        if first in SWE_AGENT_SPECIAL:
            continue
        yield src["agent"], a


def parse_openhands_events(data, src):
    d = json.loads(data)
    if isinstance(d, dict):
        d = d.get("history") or d.get("events") or []
    for e in d:
        if not isinstance(e, dict):
            continue
        if e.get("action") == "run" and e.get("source") == "agent":
            cmd = (e.get("args") or {}).get("command")
            if isinstance(cmd, str) and cmd.strip():
                yield src["agent"], cmd


SPEC_TOOL_RX = re.compile(
    r"Tool use: \*\*(?P<name>[A-Za-z_]+)\*\*|data-tool-name=\"(?P<name2>[A-Za-z_]+)\"")
SHELL_TOOLS = {"run_terminal_cmd": "cursor", "run_terminal_command": "cursor",
               "run_terminal_command_v2": "cursor", "Bash": "claude-code",
               "Shell": None, "shell": None}
FENCE_OPEN = re.compile(r"^```(bash|sh|shell|zsh|powershell|pwsh|cmd)?\s*$")


def spec_session_agent(text):
    head = text[:600]
    if re.search(r"Claude Code", head, re.I):
        return "claude-code"
    return "cursor"


INLINE_CODE = re.compile(r"^(`+)(?!`)(.+?)(?<!`)\1$")


def parse_specstory(data, src):
    """SpecStory markdown export.  Three layouts are recognised:
    1. 'Tool use: **<shell tool>**' (plain or inside <summary>/<tool-use
       data-tool-name=...>), followed within a few lines by a ```bash block
       or by a line that is one inline-code span (`cmd`);
    2. legacy layout: a ```bash block right after a '---' separator and
       followed by an output block, another separator or the end.
    Shell tools: run_terminal_cmd (Cursor), Bash (Claude Code)."""
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    default_agent = spec_session_agent(text)
    lines = text.split("\n")
    n = len(lines)

    def block_at(i):
        j = i + 1
        while j < n and lines[j].rstrip() != "```":
            j += 1
        if j >= n:
            return None, n
        return "\n".join(lines[i + 1:j]), j

    i = 0
    while i < n:
        ln = lines[i]
        mt = SPEC_TOOL_RX.search(ln)
        if mt:
            name = mt.group("name") or mt.group("name2")
            if name in SHELL_TOOLS:
                agent = SHELL_TOOLS[name] or default_agent
                # a tool-use line of the Cursor v2 layout may be repeated
                # (data-tool-name line, then summary line): look ahead
                k = i + 1
                got = False
                while k < n and k <= i + 8:
                    t = lines[k].rstrip()
                    if t == "```bash":
                        body, j = block_at(k)
                        if body is not None and body.strip():
                            yield agent, body
                        i = (j if body is not None else k) + 1
                        got = True
                        break
                    if t.startswith("```") or t == "---" or \
                            (SPEC_TOOL_RX.search(t) and k > i + 1):
                        break
                    m = INLINE_CODE.match(t.strip())
                    if m and t.strip() == t.strip() and not t.startswith("    "):
                        cmd = m.group(2)
                        if len(m.group(1)) > 1:
                            cmd = cmd.strip(" ")
                        if cmd.strip():
                            yield agent, cmd
                        i = k + 1
                        got = True
                        break
                    k += 1
                if got:
                    continue
            i += 1
            continue
        if ln.rstrip() == "```bash":
            body, j = block_at(i)
            if body is None:
                break
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            if k >= 0 and lines[k].strip() == "---":
                m2 = j + 1
                while m2 < n and not lines[m2].strip():
                    m2 += 1
                if (m2 >= n or lines[m2].startswith("```")
                        or lines[m2].rstrip() == "---") and body.strip():
                    yield default_agent, body
            i = j + 1
            continue
        i += 1


PARSERS = {"mini_swe_traj": parse_mini_swe_traj,
           "swe_agent_traj": parse_swe_agent_traj,
           "openhands_events": parse_openhands_events,
           "specstory": parse_specstory}

# ---------------------------------------------------------------------------
# scrubbing
# ---------------------------------------------------------------------------
SECRET_RXS = [re.compile(p) for p in [
    r"\bsk-[A-Za-z0-9_\-]{16,}",
    r"\bsk_(live|test)_[A-Za-z0-9]{10,}",
    r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}",
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bASIA[0-9A-Z]{16}\b",
    r"\bAIza[0-9A-Za-z_\-]{30,}",
    r"\bhf_[A-Za-z0-9]{25,}",
    r"\bglpat-[A-Za-z0-9_\-]{16,}",
    r"\bnpm_[A-Za-z0-9]{30,}",
    r"\bey[A-Za-z0-9_-]{15,}\.ey[A-Za-z0-9_-]{15,}\.[A-Za-z0-9_-]{10,}",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
    r"(?i)authorization:\s*(bearer|token|basic)\s+[A-Za-z0-9._~+/=\-]{12,}",
    r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/\-]{20,}",
    r"(?i)://[^/\s:@]+:[^/\s@]{6,}@",   # credentials in URLs
]]
KV_RX = re.compile(
    r"(?i)(api[_-]?key|apikey|secret|token|passw(or)?d|pwd|access[_-]?key|"
    r"auth|credential)[A-Za-z0-9_]*\s*[=:]\s*[\"']?([^\s\"'&;|]{12,})")
EMAIL_RX = re.compile(
    r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b")
EMAIL_OK = re.compile(
    r"(?i)^(git@|noreply@|no-reply@|[^@]*@users\.noreply\.github\.com$|"
    r"[^@]*@(example|test|localhost|domain|email|company|acme)\.[a-z.]+$|"
    r"(user|test|admin|foo|bar|you|your|name|someone|john\.?doe|jane|alice|bob)@)")
HOME_RX = re.compile(r"(/Users/|/home/|[A-Za-z]:\\\\?Users\\\\?)([A-Za-z0-9._\-]+)")
GENERIC_USERS = {"user", "runner", "ubuntu", "root", "admin", "node", "vscode",
                 "coder", "app", "jovyan", "ec2-user", "dev", "developer",
                 "agent", "sandbox", "Shared", "Public", "default", "test",
                 "username", "USER", "me", "you", "linuxbrew", "daytona",
                 "codespace", "gitpod", "ubuntu-user", "work", "project"}


def entropy(s):
    c = Counter(s)
    return -sum(v / len(s) * math.log2(v / len(s)) for v in c.values())


def looks_secret(line):
    for rx in SECRET_RXS:
        if rx.search(line):
            return True
    for m in KV_RX.finditer(line):
        val = m.group(3)
        if val.startswith("$") or val.startswith("${") or val.startswith("<"):
            continue
        if re.fullmatch(r"[A-Za-z_]+", val):
            continue  # plain words, e.g. token=dummy_placeholder_value
        if len(val) >= 16 and entropy(val) > 3.5 and re.search(r"\d", val):
            return True
    return False


def has_personal_email(line):
    for m in EMAIL_RX.finditer(line):
        if not EMAIL_OK.search(m.group(0)):
            return True
    return False


def rewrite_home(line, names):
    def rep(m):
        name = m.group(2)
        if name in GENERIC_USERS or name.startswith("$") or name == "*":
            return m.group(0)
        names.add(name)
        return m.group(1) + "user"
    return HOME_RX.sub(rep, line)


LOCAL_ROOT = None  # set from MIRROR_ROOT at run time


def scrub(line, src_names):
    """Return (line or None, reason)."""
    if looks_secret(line):
        return None, "secret"
    if has_personal_email(line):
        return None, "email"
    new = rewrite_home(line, src_names)
    # drop if the rewritten user name still appears elsewhere in the line
    for nm in src_names:
        if len(nm) >= 3 and re.search(r"(?i)(?<![A-Za-z0-9])" + re.escape(nm) +
                                      r"(?![A-Za-z0-9])", new):
            return None, "username"
    if LOCAL_ROOT and LOCAL_ROOT in new:
        return None, "localpath"   # never leak the snapshot directory
    return new, ("home-rewrite" if new != line else "")


# ---------------------------------------------------------------------------
def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    root, out = sys.argv[1], sys.argv[2]
    global LOCAL_ROOT
    LOCAL_ROOT = os.path.abspath(root)
    only = set(a for a in sys.argv[3:] if not a.startswith("--"))
    seen = {}
    stats = Counter()
    per_src = Counter()
    per_agent = Counter()
    files_per_src = Counter()
    rows = []
    for src in SOURCES:
        if only and src["id"] not in only:
            continue
        gd = gitdir_for(root, src["repo"])
        if src.get("history"):
            files = list_history_files(gd, src["commit"], src["paths"])
        else:
            files = list_files(gd, src["commit"], src["paths"])
        items = []
        for commit, path in files:
            try:
                data = read_blob(gd, commit, path)
            except subprocess.CalledProcessError:
                stats["unreadable"] += 1
                continue
            try:
                items.extend(PARSERS[src["kind"]](data, src))
            except (ValueError, KeyError, TypeError, AttributeError):
                stats["parse-error"] += 1
                continue
            files_per_src[src["id"]] += 1
        # first pass: user names seen in home paths anywhere in this source
        names = set(src.get("drop_words", []))
        for _, line in items:
            rewrite_home(line, names)
        for agent, line in items:
            if not line.strip():
                continue
            new, why = scrub(line, names)
            if new is None:
                stats["dropped-" + why] += 1
                continue
            if why:
                stats[why] += 1
            key = (agent, new)
            if key in seen:
                stats["dup"] += 1
                continue
            seen[key] = True
            rows.append({"agent": agent, "source": src["id"], "line": new})
            per_src[src["id"]] += 1
            per_agent[agent] += 1
    with open(out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print("total", len(rows))
    for k, v in sorted(per_agent.items()):
        print("agent", k, v)
    for k, v in sorted(per_src.items()):
        print("source", k, v, "files", files_per_src[k])
    for k, v in sorted(stats.items()):
        print("stat", k, v)


if __name__ == "__main__":
    main()

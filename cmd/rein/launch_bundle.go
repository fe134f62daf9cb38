//go:build unix

package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/trace"
)

// bundleFormat is the version of the launch bundle's manifest.
const bundleFormat = 1

// bundleLabel is the purpose the manifest's sum is keyed for.
const bundleLabel = "launch bundle manifest"

// launchBundle is the files a Claude Code session starts from.
type launchBundle struct {
	workspace, program string
	files              map[string][]byte
}

// bundleManifest lists a bundle's files with their sha256, and rein's
// binary, under a sum keyed with rein's trace key: a bundle changed, or
// rewritten whole by someone without the key, is refused.
type bundleManifest struct {
	Format    int               `json:"format"`
	Workspace string            `json:"workspace"`
	Program   string            `json:"program"`
	Rein      string            `json:"rein_sha256"`
	Files     map[string]string `json:"files"`
	Key       string            `json:"key_id"`
	Sum       string            `json:"sum,omitempty"`
}

// hookScript is the session's hook: rein's decision from the host, or a
// block. Claude Code lets a call through when a hook fails in any other
// way than exit 2, so anything but rein's answer (rein missing, crashed,
// hung, silent) exits 2.
const hookScript = `#!/bin/sh
# rein's hook for this session: every tool call is decided by rein on the
# host. Anything but rein's answer blocks the call.
out=$(timeout -k 2 25 /run/rein/init --rein-relay hook)
status=$?
if [ "$status" -ne 0 ] || [ -z "$out" ]; then
	echo "rein: no decision from rein's hook (exit $status): the call is blocked" >&2
	exit 2
fi
printf '%s\n' "$out"
`

func newLaunchBundle(pol *policy.Policy, ws, prog string, hosts []launchHost) *launchBundle {
	at := bwrap.SandboxHome + "/" + launchBundleAt
	settings := map[string]any{
		"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{
			"type": "command", "command": "/bin/sh " + at + "/hook.sh", "timeout": 30}}}}},
	}
	mcpConfig := map[string]any{"mcpServers": map[string]any{"rein": map[string]any{
		"type": "stdio", "command": sandbox.RelayCommand("mcp")[0], "args": sandbox.RelayCommand("mcp")[1:]}}}
	rules := make([]map[string]any, 0, len(pol.Rules))
	for _, r := range pol.Rules {
		rules = append(rules, map[string]any{"act": string(r.Act), "effect": r.Effect.String(), "pattern": r.Pattern, "layer": r.Layer.String(), "file": r.File, "line": r.Line})
	}
	resolved := map[string]any{"mode": pol.Mode.String(), "workspace": pol.Workspace, "sources": pol.Sources, "rules": rules,
		"limits": bundleLimits(pol.Limits), "network": map[string]any{"mode": "proxy", "hosts": hostStrings(hosts)}}
	b := &launchBundle{workspace: ws, program: prog, files: map[string][]byte{
		"prompt.md":     []byte(launchPrompt(pol, ws, hosts)),
		"settings.json": mustIndent(settings),
		"mcp.json":      mustIndent(mcpConfig),
		"policy.json":   mustIndent(resolved),
		"hook.sh":       []byte(hookScript),
	}}
	return b
}

func mustIndent(v any) []byte {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(data, '\n')
}

// launchPrompt is rein's section of the session's system prompt: the
// boundary it works inside.
func launchPrompt(pol *policy.Policy, ws string, hosts []launchHost) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# The boundary you work inside (rein)

This session runs inside rein's sandbox (bubblewrap, its own pid namespace).

- Workspace: %s is writable; rein's protected paths in it (.git/hooks,
  .git/config, agent configuration, secrets) are read-only or hidden.
- Home: %s is private to this session and holds only rein's files; the
  user's real home directory is not visible.
- Network: only %s is reachable, through rein's egress proxy; every other
  connection is refused and recorded.
- Every tool call is decided by rein's policy (mode %s) before it runs; a
  refusal names the rule and the file that decided it, and asking again does
  not change it.
- rein's own tools are available as mcp__rein__* (shell, shell_start,
  read_result, the file tools): their results are bounded, with an id to
  read the rest.
- Everything is recorded in rein's trace.
`, ws, bwrap.SandboxHome, strings.Join(hostStrings(hosts), ", "), pol.Mode)
	return b.String()
}

// write writes the bundle into dir, which must not exist: made 0700, each
// file 0600 and created exclusively, then the manifest.
func (b *launchBundle) write(dir, exe string, key *trace.Key) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	// The modes are the bundle's whatever the umask.
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	reinSum, err := fileSum(exe)
	if err != nil {
		return fmt.Errorf("hashing rein's binary: %w", err)
	}
	m := bundleManifest{Format: bundleFormat, Workspace: b.workspace, Program: b.program, Rein: reinSum, Files: map[string]string{}, Key: key.ID()}
	for name, data := range b.files {
		if err := writeExclusive(filepath.Join(dir, name), data); err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		m.Files[name] = hex.EncodeToString(sum[:])
	}
	m.Sum = key.Sum(bundleLabel, m.signed())
	return writeExclusive(filepath.Join(dir, "manifest.json"), mustIndent(m))
}

// signed is the manifest's bytes as its sum covers them: all but the sum.
func (m bundleManifest) signed() []byte {
	m.Sum = ""
	data, _ := json.Marshal(m)
	return data
}

func writeExclusive(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// verifyBundle checks a bundle before a session starts from it: the
// directory is this user's, 0700, and holds exactly the manifest's files,
// each a regular file of mode 0600 with its sha256; the manifest's sum is
// rein's, under this user's key; rein's binary is the one it names.
func verifyBundle(dir, exe string, key *trace.Key) (*bundleManifest, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return nil, fmt.Errorf("it is not a directory")
	case fi.Mode().Perm() != 0o700:
		return nil, fmt.Errorf("its mode is %o, not 700", fi.Mode().Perm())
	case st == nil || int(st.Uid) != os.Getuid():
		return nil, fmt.Errorf("it is not yours")
	}
	data, err := readBundleFile(dir, "manifest.json")
	if err != nil {
		return nil, err
	}
	var m bundleManifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest.json: %v", err)
	}
	if m.Format != bundleFormat {
		return nil, fmt.Errorf("manifest.json is format %d; this rein reads format %d", m.Format, bundleFormat)
	}
	if m.Key != key.ID() || subtle.ConstantTimeCompare([]byte(m.Sum), []byte(key.Sum(bundleLabel, m.signed()))) != 1 {
		return nil, fmt.Errorf("manifest.json was not written by rein with your trace key (or was changed since)")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var extra []string
	for _, e := range entries {
		if _, ok := m.Files[e.Name()]; !ok && e.Name() != "manifest.json" {
			extra = append(extra, e.Name())
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, fmt.Errorf("it holds files the manifest does not list: %s", strings.Join(extra, ", "))
	}
	for _, name := range []string{"prompt.md", "settings.json", "mcp.json", "policy.json", "hook.sh"} {
		if _, ok := m.Files[name]; !ok {
			return nil, fmt.Errorf("the manifest lists no %s", name)
		}
	}
	names := make([]string, 0, len(m.Files))
	for name := range m.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		data, err := readBundleFile(dir, name)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != m.Files[name] {
			return nil, fmt.Errorf("%s changed since the bundle was written", name)
		}
	}
	sum, err := fileSum(exe)
	if err != nil {
		return nil, fmt.Errorf("hashing rein's binary: %v", err)
	}
	if sum != m.Rein {
		return nil, fmt.Errorf("rein's binary %s is not the one the bundle was written with", exe)
	}
	return &m, nil
}

// readBundleFile reads one of a bundle's files: a regular file, not a
// link, of mode 0600, at most 1 MiB.
func readBundleFile(dir, name string) ([]byte, error) {
	if strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("the manifest names %q, which is not a file of the bundle", name)
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		return nil, fmt.Errorf("%s is not a regular file of mode 600", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20+1))
	if err != nil {
		return nil, err
	}
	if len(data) > 1<<20 {
		return nil, fmt.Errorf("%s is larger than 1 MiB", name)
	}
	return data, nil
}

// bundleLimits is limits.Limits without its JSON tags: policy.json has
// always named the limits by their Go fields (MemoryBytes), and keeps
// doing so. A conversion, so that a field added to Limits fails to
// compile here instead of going missing from the bundle.
type bundleLimits struct {
	MemoryBytes   int64
	Processes     int64
	CPUSeconds    int64
	OpenFiles     int64
	FileSizeBytes int64
	TmpBytes      int64
}

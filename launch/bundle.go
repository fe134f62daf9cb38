//go:build unix

package launch

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
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/reinhq/rein/internal/boundary"
	"github.com/reinhq/rein/launch/relay"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox/bwrap"
	"github.com/reinhq/rein/trace"
)

// BundleAt is where a session finds its bundle, below its private HOME.
const BundleAt = ".rein/launch"

// bundleFormat is the version of the launch bundle's manifest.
const bundleFormat = 1

// bundleLabel is the purpose the manifest's sum is keyed for.
const bundleLabel = "launch bundle manifest"

// Bundle is the files a session of an agent starts from: rein's
// (prompt.md, policy.json, hook.sh) and the agent's own.
type Bundle struct {
	workspace, program string
	files              map[string][]byte
}

// Manifest lists a bundle's files with their sha256, and rein's
// binary, under a sum keyed with rein's trace key: a bundle changed, or
// rewritten whole by someone without the key, is refused.
type Manifest struct {
	Format    int               `json:"format"`
	Workspace string            `json:"workspace"`
	Program   string            `json:"program"`
	Rein      string            `json:"rein_sha256"`
	Files     map[string]string `json:"files"`
	Key       string            `json:"key_id"`
	Sum       string            `json:"sum,omitempty"`
}

// hookScript is the session's hook: rein's decision from the host, or a
// block. An agent lets a call through when a hook fails in any other way
// than exit 2 (Claude Code's rule), so anything but rein's answer (rein
// missing, crashed, hung, silent) exits 2.
var hookScript = `#!/bin/sh
# rein's hook for this session: every tool call is decided by rein on the
# host. Anything but rein's answer blocks the call.
out=$(timeout -k 2 25 ` + strings.Join(relay.Command("hook"), " ") + `)
status=$?
if [ "$status" -ne 0 ] || [ -z "$out" ]; then
	echo "rein: no decision from rein's hook (exit $status): the call is blocked" >&2
	exit 2
fi
printf '%s\n' "$out"
`

// NewBundle is the bundle of agent's session in the workspace ws, running
// the program prog, whose model is m and which reaches hosts besides.
func NewBundle(agent Agent, pol *policy.Policy, ws, prog string, m Model, hosts []Host) *Bundle {
	at := bwrap.SandboxHome + "/" + BundleAt
	rules := make([]map[string]any, 0, len(pol.Rules))
	for _, r := range pol.Rules {
		rules = append(rules, map[string]any{"act": string(r.Act), "effect": r.Effect.String(), "pattern": r.Pattern, "layer": r.Layer.String(), "file": r.File, "line": r.Line})
	}
	resolved := map[string]any{"mode": pol.Mode.String(), "workspace": pol.Workspace, "sources": pol.Sources, "rules": rules,
		"limits": bundleLimits(pol.Limits), "network": map[string]any{"mode": "proxy", "hosts": Strings(hosts)},
		"model": map[string]any{"provider": m.Provider, "api": string(m.Family), "base_url": m.Base, "gateway": m.Local()}}
	b := &Bundle{workspace: ws, program: prog, files: map[string][]byte{
		"prompt.md":   []byte(Prompt(agent, pol, ws, m, hosts)),
		"policy.json": JSON(resolved),
		"hook.sh":     []byte(hookScript),
	}}
	for name, data := range agent.Files(at, m) {
		b.files[name] = data
	}
	return b
}

// reinFiles are the files every bundle holds.
var reinFiles = []string{"prompt.md", "policy.json", "hook.sh"}

// JSON is v as indented JSON, with a final newline.
func JSON(v any) []byte {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(data, '\n')
}

// Prompt is rein's section of the session's system prompt: the boundary
// the agent works inside.
func Prompt(agent Agent, pol *policy.Policy, ws string, m Model, hosts []Host) string {
	var b strings.Builder
	b.WriteString("# The boundary you work inside (rein)\n\n")
	b.WriteString("This session runs inside rein's sandbox (bubblewrap, its own pid namespace).\n\n")
	fmt.Fprintf(&b, "- Workspace: %s is writable; rein's protected paths in it (.git/hooks,\n  .git/config, agent configuration, secrets) are read-only or hidden.\n", ws)
	fmt.Fprintf(&b, "- Home: %s is private to this session and holds only rein's files; the\n  user's real home directory is not visible.\n", bwrap.SandboxHome)
	fmt.Fprintf(&b, "- Model: your model calls go through rein's gateway at %s, which holds\n  the real key, records each call and bounds the session's tokens and cost.\n", m.Local())
	if len(hosts) > 0 {
		fmt.Fprintf(&b, "- Network: only %s is reachable, through rein's egress proxy; every other\n  connection is refused and recorded.\n", strings.Join(Strings(hosts), ", "))
	} else {
		b.WriteString("- Network: none besides the gateway; every other connection is refused.\n")
	}
	b.WriteString(boundary.Decided(pol.Mode.String()))
	b.WriteString(boundary.Grammar(false))
	if name := agent.ToolName("*"); name != "" {
		fmt.Fprintf(&b, "- rein's own tools are available as %s (shell, shell_start,\n  read_result, the file tools): their results are bounded, with an id to\n  read the rest.\n", name)
	}
	b.WriteString("- Everything is recorded in rein's trace.\n")
	for _, name := range agent.Guidance() {
		if text := guidance(ws, name); text != "" {
			fmt.Fprintf(&b, "\n## %s (the repository's guidance)\n\n%s\n", name, text)
		}
	}
	return b.String()
}

// Write writes the bundle into dir, which must not exist: made 0700, each
// file 0600 and created exclusively, then the manifest, keyed with key,
// naming the rein binary exe.
func (b *Bundle) Write(dir, exe string, key *trace.Key) error {
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
	m := Manifest{Format: bundleFormat, Workspace: b.workspace, Program: b.program, Rein: reinSum, Files: map[string]string{}, Key: key.ID()}
	for name, data := range b.files {
		if err := writeExclusive(filepath.Join(dir, name), data); err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		m.Files[name] = hex.EncodeToString(sum[:])
	}
	m.Sum = key.Sum(bundleLabel, m.signed())
	return writeExclusive(filepath.Join(dir, "manifest.json"), JSON(m))
}

// signed is the manifest's bytes as its sum covers them: all but the sum.
func (m Manifest) signed() []byte {
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

// Verify checks agent's bundle in dir before a session starts from it:
// the directory is this user's, 0700, and holds exactly the manifest's
// files, rein's and the agent's among them, each a regular file of mode
// 0600 with its sha256; the manifest's sum is rein's, under this user's
// key; rein's binary exe is the one it names.
func Verify(agent Agent, dir, exe string, key *trace.Key) (*Manifest, error) {
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
	var m Manifest
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
	want := slices.Clone(reinFiles)
	for name := range agent.Files("", Model{}) {
		want = append(want, name)
	}
	for _, name := range want {
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

// maxGuidance bounds what one guidance file adds to the prompt.
const maxGuidance = 32 << 10

// guidance is a guidance file of the workspace (never through a link out
// of it), bounded, or "".
func guidance(ws, name string) string {
	f, err := os.OpenInRoot(ws, name)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxGuidance+1))
	if err != nil {
		return ""
	}
	if len(data) > maxGuidance {
		return strings.ToValidUTF8(string(data[:maxGuidance]), "") + fmt.Sprintf("\n[rein: %s is longer than %d bytes; the rest is not shown]", name, maxGuidance)
	}
	return string(data)
}

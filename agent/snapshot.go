package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The bounds of a workspace snapshot: the entries listed, and the changes
// shown to the model.
const (
	maxSnapshotEntries = 20_000
	maxChangesShown    = 50
	maxHashedBytes     = 1 << 20
)

// snapshotEntry is a workspace entry as a snapshot lists it: cheap to
// take (a stat, no read), enough to see that it changed.
type snapshotEntry struct {
	Size  int64       `json:"size"`
	MTime int64       `json:"mtime"`
	Mode  fs.FileMode `json:"mode"`
}

type snapshot struct {
	Entries map[string]snapshotEntry `json:"entries"`
	// Truncated says the workspace had more entries than a snapshot
	// lists.
	Truncated bool `json:"truncated,omitempty"`
}

// takeSnapshot lists the workspace's entries (not .git's), bounded.
func takeSnapshot(ws string) snapshot {
	s := snapshot{Entries: map[string]snapshotEntry{}}
	filepath.WalkDir(ws, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == ws {
			return nil
		}
		rel, _ := filepath.Rel(ws, p)
		if e.IsDir() && e.Name() == ".git" {
			return filepath.SkipDir
		}
		if len(s.Entries) >= maxSnapshotEntries {
			s.Truncated = true
			return filepath.SkipAll
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		s.Entries[filepath.ToSlash(rel)] = snapshotEntry{Size: info.Size(), MTime: info.ModTime().UnixNano(), Mode: info.Mode()}
		return nil
	})
	return s
}

// changeSince lists what differs in the workspace from the snapshot:
// each path added, changed or removed, with its size and, for a file
// small enough, the first hex digits of its hash now.
func changeSince(ws string, before snapshot) string {
	now := takeSnapshot(ws)
	var lines []string
	hash := func(p string, e snapshotEntry) string {
		if !e.Mode.IsRegular() || e.Size > maxHashedBytes {
			return ""
		}
		data, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(p)))
		if err != nil {
			return ""
		}
		sum := sha256.Sum256(data)
		return ", sha256 " + hex.EncodeToString(sum[:6])
	}
	for p, e := range now.Entries {
		b, ok := before.Entries[p]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("added %s (%d bytes%s)", p, e.Size, hash(p, e)))
		case b != e && !(e.Mode.IsDir() && b.Mode.IsDir()):
			lines = append(lines, fmt.Sprintf("changed %s (%d bytes, was %d%s)", p, e.Size, b.Size, hash(p, e)))
		}
	}
	for p, b := range before.Entries {
		if _, ok := now.Entries[p]; !ok {
			lines = append(lines, fmt.Sprintf("removed %s (was %d bytes)", p, b.Size))
		}
	}
	sort.Slice(lines, func(i, j int) bool { return pathOfLine(lines[i]) < pathOfLine(lines[j]) })
	var b strings.Builder
	switch {
	case len(lines) == 0:
		b.WriteString("no change in the workspace since the call started")
	default:
		fmt.Fprintf(&b, "%d change(s) in the workspace since the call started:", len(lines))
		for i, l := range lines {
			if i == maxChangesShown {
				fmt.Fprintf(&b, "\n  ... and %d more", len(lines)-i)
				break
			}
			b.WriteString("\n  " + l)
		}
	}
	if before.Truncated || now.Truncated {
		fmt.Fprintf(&b, "\n(the workspace has more than %d entries; the listing compares the first %d only)", maxSnapshotEntries, maxSnapshotEntries)
	}
	return b.String()
}

func pathOfLine(l string) string {
	_, rest, _ := strings.Cut(l, " ")
	p, _, _ := strings.Cut(rest, " (")
	return p
}

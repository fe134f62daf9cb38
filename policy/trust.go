package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/pelletier/go-toml/v2"
)

// A project's policy file lives in the repository the agent works on, so
// the agent (or whoever wrote the repository) controls it. Its deny and ask
// rules always apply; its allow rules and any setting that widens what runs
// apply only after the user recorded the file's SHA-256 with `rein trust`.
// Any change to the file voids the trust, and is reported rather than
// silently used.

// trustRecord is one trusted project file in the trust file.
type trustRecord struct {
	Path   string `toml:"path"`
	SHA256 string `toml:"sha256"`
}

type trustFileContent struct {
	Project []trustRecord `toml:"project"`
}

// TrustFileName is the file, beside the user policy, that records trusted
// project policies.
const TrustFileName = "trust.toml"

// trustFile is where trust is recorded: beside the user's policy file.
func trustFile(scopes []Scope) string {
	for _, s := range scopes {
		if s.Layer == LayerUser && s.Path != "" {
			return filepath.Join(filepath.Dir(s.Path), TrustFileName)
		}
	}
	return ""
}

func loadTrust(file string) (map[string]string, error) {
	out := map[string]string{}
	if file == "" {
		return out, nil
	}
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, &ConfigError{File: file, Err: err}
	}
	var c trustFileContent
	d := toml.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, &ConfigError{File: file, Line: row, Err: err}
		}
		return nil, &ConfigError{File: file, Err: err}
	}
	for _, r := range c.Project {
		out[r.Path] = r.SHA256
	}
	return out, nil
}

func fileSHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// projectTrust reports whether the project file with these bytes is
// trusted, its source state, and a note for the user.
func projectTrust(path string, data []byte, trust map[string]string) (bool, string, string) {
	abs := projectKey(path)
	want, ok := trust[abs]
	switch {
	case !ok:
		return false, "untrusted", fmt.Sprintf("its allow rules and widening settings are not applied; to trust it, run: rein trust %s", projectDirOf(abs))
	case want != fileSHA256(data):
		return false, "untrusted", fmt.Sprintf("the file changed since it was trusted, so its allow rules and widening settings are not applied; review it, then run: rein trust %s", projectDirOf(abs))
	}
	return true, "trusted", ""
}

// projectDirOf turns .../DIR/.rein/policy.toml back into DIR for messages.
func projectDirOf(file string) string {
	d := filepath.Dir(file)
	if filepath.Base(d) == ".rein" {
		return filepath.Dir(d)
	}
	return file
}

// Trust records the SHA-256 of the project policy file of o (the one Load
// reads, read the same way: beneath the workspace as named, no link
// followed) in the trust file of the user scope, replacing any earlier
// record for the same file. It returns the file, the trust file and the
// digest.
func Trust(o Options) (projectFile, trustPath, digest string, err error) {
	scopes := DefaultScopes(o)
	tf := trustFile(scopes)
	if tf == "" {
		return "", "", "", errors.New("policy: no user configuration directory: set HOME, XDG_CONFIG_HOME or --user-policy")
	}
	var sc Scope
	for _, s := range scopes {
		if s.Layer == LayerProject {
			sc = s
		}
	}
	if sc.Path == "" {
		return "", "", "", errors.New("policy: no project policy: name a workspace")
	}
	projectFile = sc.Path
	data, err := readPolicyFile(sc)
	if err != nil {
		return projectFile, "", "", fmt.Errorf("policy: no project policy to trust: %w", err)
	}
	// The file must load before it can be trusted: trusting a broken file
	// would only move the error to the next run.
	if _, _, err := decode(projectFile, data); err != nil {
		return projectFile, "", "", err
	}
	trust, err := loadTrust(tf)
	if err != nil {
		return projectFile, "", "", err
	}
	digest = fileSHA256(data)
	trust[projectKey(projectFile)] = digest
	var c trustFileContent
	for p, d := range trust {
		c.Project = append(c.Project, trustRecord{Path: p, SHA256: d})
	}
	sort.Slice(c.Project, func(i, j int) bool { return c.Project[i].Path < c.Project[j].Path })
	out, err := toml.Marshal(c)
	if err != nil {
		return projectFile, "", "", err
	}
	if err := os.MkdirAll(filepath.Dir(tf), 0o700); err != nil {
		return projectFile, "", "", fmt.Errorf("policy: creating %s: %w", filepath.Dir(tf), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(tf), ".trust-*.toml")
	if err != nil {
		return projectFile, "", "", fmt.Errorf("policy: writing %s: %w", tf, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return projectFile, "", "", fmt.Errorf("policy: writing %s: %w", tf, err)
	}
	if err := tmp.Close(); err != nil {
		return projectFile, "", "", fmt.Errorf("policy: writing %s: %w", tf, err)
	}
	if err := os.Rename(tmp.Name(), tf); err != nil {
		return projectFile, "", "", fmt.Errorf("policy: writing %s: %w", tf, err)
	}
	return projectFile, tf, digest, nil
}

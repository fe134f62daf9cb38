package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneHelper: the tests read REIN_REQUIRE_SANDBOX only through this
// package, so "fail in CI, skip elsewhere" is written once.
func TestOneHelper(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasPrefix(filepath.ToSlash(p), "../../internal/testenv/") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), `Getenv("REIN_REQUIRE_SANDBOX")`) || strings.Contains(string(data), `Getenv(requireEnv)`) {
			t.Errorf("%s reads REIN_REQUIRE_SANDBOX itself: use testenv.Missing or testenv.Required", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

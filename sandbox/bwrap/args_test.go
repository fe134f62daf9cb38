package bwrap

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/testenv"
)

// fakeHost builds a small host tree: a merged-/usr system, an /etc with a
// secret, a workspace whose name needs quoting in any shell, and a home.
type fakeHost struct {
	root, usr, bin, etc, shadow, private, ws, home string
}

func newFakeHost(t *testing.T) fakeHost {
	t.Helper()
	root := t.TempDir()
	h := fakeHost{
		root:    root,
		usr:     filepath.Join(root, "usr"),
		bin:     filepath.Join(root, "bin"),
		etc:     filepath.Join(root, "etc"),
		shadow:  filepath.Join(root, "etc", "shadow"),
		private: filepath.Join(root, "etc", "ssl", "private"),
		ws:      filepath.Join(root, "my work\nspace 'x'"),
		home:    filepath.Join(root, "home of rein"),
	}
	for _, d := range []string{h.usr, h.private, h.home, filepath.Join(h.ws, ".git", "hooks"), filepath.Join(h.ws, ".rein")} {
		mustMkdir(t, d)
	}
	testenv.Must(t, os.Symlink("usr/bin", h.bin))
	mustWrite(t, h.shadow, "root:x", 0o640)
	mustWrite(t, filepath.Join(h.ws, ".git", "config"), "[core]\n", 0o644)
	mustWrite(t, filepath.Join(h.ws, ".env"), "TOKEN=1\n", 0o600)
	return h
}

func TestArgs(t *testing.T) {
	h := newFakeHost(t)
	ws := h.ws
	worktree := filepath.Join(h.root, "worktree")
	mustMkdir(t, worktree)
	mustWrite(t, filepath.Join(worktree, ".git"), "gitdir: "+filepath.Join(h.root, "main.git", "worktrees", "w")+"\n", 0o644)
	init := filepath.Join(h.root, "rein")
	mustWrite(t, init, "", 0o755)
	cacheA, cacheB := filepath.Join(h.root, "gocache"), filepath.Join(h.root, "npm")
	mustMkdir(t, cacheA)
	mustMkdir(t, cacheB)

	namespaces := []string{"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--as-pid-1"}
	system := []string{
		"--ro-bind", h.usr, h.usr,
		"--symlink", "usr/bin", h.bin,
		"--ro-bind", h.etc, h.etc,
	}
	proc := []string{
		"--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
		"--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
		"--dev", "/dev",
	}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }

	tests := []struct {
		name string
		view View
		argv []string
		want []string
	}{{
		name: "default workspace view",
		view: View{
			Workspace:    ws,
			Protected:    []string{".git/hooks", ".git/config", ".rein", ".git/info/missing"},
			Masked:       []string{".env", "absent.env"},
			Home:         h.home,
			SystemDirs:   []string{h.usr, h.bin, filepath.Join(h.root, "libx32"), h.etc},
			SystemMasked: []string{h.shadow, h.private},
			Network:      NetworkOff,
			Env:          []string{"PATH=/usr/bin", "HOME=" + SandboxHome},
		},
		argv: []string{"make", "test"},
		want: cat(namespaces, []string{"--hostname", "rein"}, proc, []string{
			"--size", "536870912", "--tmpfs", "/tmp",
		}, system, []string{
			"--perms", "0444", "--ro-bind-data", "3", h.shadow,
			"--tmpfs", h.private, "--remount-ro", h.private,
			"--bind", h.home, "/run/rein/home",
			"--bind", ws, ws,
			"--bind-fd", "4", ws + "/.git",
			"--ro-bind-fd", "5", ws + "/.git/config",
			"--ro-bind-fd", "6", ws + "/.git/hooks",
			"--ro-bind-fd", "7", ws + "/.rein",
			"--perms", "0444", "--ro-bind-data", "8", ws + "/.env",
			"--remount-ro", "/", "--chdir", ws, "--", "make", "test",
		}),
	}, {
		name: "read-only, full network, init, caches",
		view: View{
			Workspace:         ws,
			ReadOnlyWorkspace: true,
			Protected:         []string{".git/hooks"},
			Tmp:               1 << 20,
			Caches:            map[string]string{cacheB: "/cache/npm", cacheA: "/cache/go"},
			HostReadPaths:     []string{filepath.Join(h.root, "lib32"), h.usr},
			SystemDirs:        []string{h.usr},
			Network:           NetworkFull,
			Chdir:             ws + "/sub dir",
			Hostname:          "box",
			InitPath:          init,
		},
		argv: []string{"run", "--", "a b"},
		want: []string{
			"--unshare-all", "--unshare-user", "--share-net", "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--as-pid-1",
			"--hostname", "box",
			"--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
			"--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
			"--dev", "/dev",
			"--size", "1048576", "--tmpfs", "/tmp",
			"--ro-bind", h.usr, h.usr,
			"--bind", cacheA, "/cache/go",
			"--bind", cacheB, "/cache/npm",
			"--ro-bind", filepath.Join(h.root, "lib32"), filepath.Join(h.root, "lib32"),
			"--ro-bind", h.usr, h.usr,
			"--ro-bind", ws, ws,
			"--ro-bind-fd", "3", ws + "/.git",
			"--ro-bind-fd", "4", ws + "/.git/hooks",
			"--ro-bind", init, "/run/rein/init",
			"--remount-ro", "/", "--chdir", ws + "/sub dir", "--", "/run/rein/init", "run", "--", "a b",
		},
	}, {
		name: "worktree .git file is bound read-only",
		view: View{
			Workspace: worktree,
			Protected: []string{".git/hooks", ".git/config"},
			Network:   NetworkOff,
		},
		argv: []string{"true"},
		want: cat(namespaces, []string{"--hostname", "rein"}, proc, []string{
			"--size", "536870912", "--tmpfs", "/tmp",
			"--bind", worktree, worktree,
			"--ro-bind-fd", "3", worktree + "/.git",
			"--remount-ro", "/", "--chdir", worktree, "--", "true",
		}),
	}}
	if err := os.Mkdir(filepath.Join(h.root, "lib32"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Args(tt.view, tt.argv)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Args:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestArgsMaskedNested: the directories between the workspace and a
// masked path are bound over themselves first, so that no command renames
// the secret away from its mask, and every masked file is covered by the
// one empty file.
func TestArgsMaskedNested(t *testing.T) {
	h := newFakeHost(t)
	ws := h.ws
	mustMkdir(t, filepath.Join(ws, "a", "b", "keys"))
	mustWrite(t, filepath.Join(ws, "a", "b", "k.pem"), "pem", 0o600)
	empty := filepath.Join(h.root, "empty")
	mustWrite(t, empty, "", 0o444)
	got, err := Args(View{Workspace: ws, Network: NetworkOff, Protected: []string{".git/config"},
		Masked: []string{"a/b/k.pem", ".env", "a/b/keys"}, EmptyFile: empty}, []string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(got, "--bind")
	want := []string{
		"--bind", ws, ws,
		"--bind-fd", "3", ws + "/.git",
		"--bind-fd", "4", ws + "/a",
		"--bind-fd", "5", ws + "/a/b",
		"--ro-bind-fd", "6", ws + "/.git/config",
		"--ro-bind", empty, ws + "/a/b/k.pem",
		"--ro-bind", empty, ws + "/.env",
		"--tmpfs", ws + "/a/b/keys", "--remount-ro", ws + "/a/b/keys",
		"--remount-ro", "/", "--chdir", ws, "--", "true",
	}
	if i < 0 || !slices.Equal(got[i:], want) {
		t.Errorf("Args:\n got %q\nwant %q", got, want)
	}
	mustWrite(t, filepath.Join(h.root, "full"), "x", 0o444)
	if _, err := Args(View{Workspace: ws, Network: NetworkOff, Masked: []string{".env"}, EmptyFile: filepath.Join(h.root, "full")}, []string{"true"}); err == nil {
		t.Error("a non-empty EmptyFile was taken")
	}
}

func TestArgsRefuses(t *testing.T) {
	h := newFakeHost(t)
	ok := View{Workspace: h.ws, Network: NetworkOff}
	link := filepath.Join(h.root, "linked")
	mustMkdir(t, filepath.Join(link, ".git"))
	testenv.Must(t, os.Symlink(h.root, filepath.Join(link, ".git", "hooks")))
	inner := filepath.Join(h.root, "inner")
	mustMkdir(t, inner)
	mustWrite(t, filepath.Join(inner, ".git"), "gitdir: ./modules/x\n", 0o644)

	tests := []struct {
		name  string
		edit  func(v *View)
		argv  []string
		field string
	}{
		{"empty argv", func(v *View) {}, []string{}, "argv"},
		{"relative workspace", func(v *View) { v.Workspace = "ws" }, nil, "Workspace"},
		{"workspace is /tmp", func(v *View) { v.Workspace = "/tmp" }, nil, "Workspace"},
		{"workspace is root", func(v *View) { v.Workspace = "/" }, nil, "Workspace"},
		{"workspace missing", func(v *View) { v.Workspace = filepath.Join(h.root, "nope") }, nil, "Workspace"},
		{"protected escapes", func(v *View) { v.Protected = []string{".git/../../x"} }, nil, "Protected"},
		{"protected absolute", func(v *View) { v.Protected = []string{"/etc"} }, nil, "Protected"},
		{"protected is the workspace", func(v *View) { v.Protected = []string{"."} }, nil, "Protected"},
		{"protected through a link", func(v *View) { v.Workspace = link; v.Protected = []string{".git/hooks"} }, nil, "Protected"},
		{"gitdir inside the workspace", func(v *View) { v.Workspace = inner; v.Protected = []string{".git/hooks"} }, nil, "Protected"},
		{"masked escapes", func(v *View) { v.Masked = []string{"../.env"} }, nil, "Masked"},
		{"no network mode", func(v *View) { v.Network = "" }, nil, "Network"},
		{"proxy network", func(v *View) { v.Network = "proxy" }, nil, "Network"},
		{"env without =", func(v *View) { v.Env = []string{"PATH"} }, nil, "Env"},
		{"env twice", func(v *View) { v.Env = []string{"A=1", "A=2"} }, nil, "Env"},
		{"cache over /proc", func(v *View) { v.Caches = map[string]string{h.home: "/proc/x"} }, nil, "Caches"},
		{"cache over /run", func(v *View) { v.Caches = map[string]string{h.home: "/run"} }, nil, "Caches"},
		{"read path in workspace", func(v *View) { v.HostReadPaths = []string{h.ws + "/.git"} }, nil, "HostReadPaths"},
		{"read path missing", func(v *View) { v.HostReadPaths = []string{h.root + "/nope"} }, nil, "HostReadPaths"},
		{"system masked outside", func(v *View) { v.SystemDirs = []string{h.usr}; v.SystemMasked = []string{h.shadow} }, nil, "SystemMasked"},
		{"negative tmp", func(v *View) { v.Tmp = -1 }, nil, "Tmp"},
		{"init is a directory", func(v *View) { v.InitPath = h.usr }, nil, "InitPath"},
		{"relative chdir", func(v *View) { v.Chdir = "sub" }, nil, "Chdir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := ok
			tt.edit(&v)
			argv := tt.argv
			if argv == nil {
				argv = []string{"true"}
			}
			_, err := Args(v, argv)
			var ve *ViewError
			if !errors.As(err, &ve) {
				t.Fatalf("Args = %v, want a *ViewError", err)
			}
			if ve.Field != tt.field {
				t.Errorf("Field = %q, want %q (%v)", ve.Field, tt.field, err)
			}
		})
	}
}

func TestViewErrorHidesEnvValues(t *testing.T) {
	_, err := Args(View{Workspace: t.TempDir(), Network: NetworkOff, Env: []string{"TOKEN=s3cret", "TOKEN=s3cret"}}, []string{"true"})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Args = %v, want an error that names TOKEN without its value", err)
	}
}

func TestPrivateFiles(t *testing.T) {
	h := newFakeHost(t)
	mustWrite(t, filepath.Join(h.private, "key.pem"), "k", 0o600)
	testenv.Must(t, os.Chmod(h.private, 0o710))
	mustWrite(t, filepath.Join(h.etc, "passwd"), "root", 0o644)
	testenv.Must(t, os.Symlink("shadow", filepath.Join(h.etc, "link")))
	got, err := PrivateFiles(h.etc)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{h.shadow, h.private}; !slices.Equal(got, want) {
		t.Errorf("PrivateFiles = %q, want %q", got, want)
	}
}

func TestFindAndVersion(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	p, err := Find()
	if err != nil {
		var nf *NotFoundError
		if !errors.As(err, &nf) || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
			t.Fatalf("Find = %v, want a *NotFoundError saying how to install bubblewrap", err)
		}
		t.Skip(err)
	}
	v, err := Version(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(v, ".") < 1 || strings.ContainsAny(v, " \n") {
		t.Errorf("Version = %q, want a dotted version", v)
	}
	if _, err := Version(filepath.Join(t.TempDir(), "bwrap")); err == nil {
		t.Error("Version of a missing binary succeeded")
	}
}

func mustMkdir(t testing.TB, dir string) {
	t.Helper()
	testenv.Must(t, os.MkdirAll(dir, 0o755))
}

func mustWrite(t testing.TB, path, data string, perm os.FileMode) {
	t.Helper()
	testenv.Must(t, os.WriteFile(path, []byte(data), perm))
	testenv.Must(t, os.Chmod(path, perm))
}

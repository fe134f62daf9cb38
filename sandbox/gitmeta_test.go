//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/testenv"
)

// executingKey returns the first variable of a git config file that is
// not known to be inert, or "" when every one is. A file that cannot be
// read as git config counts as executing.
func executingKey(data []byte, gitdir, ws string) string {
	switch all := executingEntries(data, gitdir, ws); {
	case len(all) == 0:
		return ""
	case all[0] == unreadableConfig:
		return unreadableConfig.Section
	default:
		return all[0].Key()
	}
}

func TestExecutingKey(t *testing.T) {
	ws := "/w"
	for _, c := range []struct {
		config, want string
	}{
		{"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n", ""},
		{"[remote \"origin\"]\n\turl = https://example.com/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n", ""},
		{"[user]\nname = A ; comment\nemail = \"a@b\" # comment\n", ""},
		{"[core]\n\tfsmonitor = touch /tmp/m\n", "core.fsmonitor"},
		{"[core] hooksPath = /tmp\n", "core.hookspath"},
		{"[CORE]\n\tsshCommand = evil\n", "core.sshcommand"},
		{"[core]\n\tpager = less\n", "core.pager"},
		{"[core]\n\teditor = vi\n", "core.editor"},
		{"[core]\n\taskPass = x\n", "core.askpass"},
		{"[diff]\n\texternal = x\n", "diff.external"},
		{"[diff \"pdf\"]\n\ttextconv = x\n", "diff.pdf.textconv"},
		{"[diff \"pdf\"]\n\tcommand = x\n", "diff.pdf.command"},
		{"[filter \"lfs\"]\n\tclean = x\n", "filter.lfs.clean"},
		{"[filter \"lfs\"]\n\tprocess = x\n", "filter.lfs.process"},
		{"[merge \"m\"]\n\tdriver = x\n", "merge.m.driver"},
		{"[credential]\n\thelper = x\n", "credential.helper"},
		{"[sequence]\n\teditor = x\n", "sequence.editor"},
		{"[gpg]\n\tprogram = x\n", "gpg.program"},
		{"[gpg \"ssh\"]\n\tprogram = x\n", "gpg.ssh.program"},
		{"[alias]\n\tst = !sh -c x\n", "alias.st"},
		{"[uploadpack]\n\tpackObjectsHook = x\n", "uploadpack.packobjectshook"},
		{"[remote \"o\"]\n\tuploadpack = x\n", "remote.o.uploadpack"},
		{"[remote \"o\"]\n\treceivepack = x\n", "remote.o.receivepack"},
		{"[remote \"o\"]\n\turl = ext::sh -c touch% /tmp/m\n", "remote.o.url"},
		{"[remote \"o\"]\n\turl = -uevil\n", "remote.o.url"},
		{"[include]\n\tpath = /tmp/x\n", "include.path"},
		{"[includeIf \"gitdir:/\"]\n\tpath = /tmp/x\n", "includeif.gitdir:/.path"},
		{"[core]\n\tworktree = /etc\n", "core.worktree"},
		{"[core]\n\tworktree = ../../../sub\n", ""},
		{"[core.x]\n\tfoo = 1\n", "core.x.foo"},
		{"[submodule \"a\"]\n\tpath = a\n\turl = https://x/a\n\tupdate = rebase\n", ""},
		{"[submodule \"a\"]\n\tupdate = !touch /tmp/m\n", "submodule.a.update"},
		{"[submodule \"a\"]\n\turl = ext::sh -c x\n", "submodule.a.url"},
		{"[core]\n\tfilemode = true \\\n\tfsmonitor = x\n", ""},
		{"[core]\n\tfilemode = \"unterminated\n", "(unreadable as git config)"},
		{"no section = 1\n", "(unreadable as git config)"},
		{"[core\n", "(unreadable as git config)"},
		{"[core]\n\tfilemode\n\tbare\n", ""},
	} {
		if got := executingKey([]byte(c.config), ".git/modules/sub", ws); got != c.want {
			t.Errorf("%q: got %q, want %q", c.config, got, c.want)
		}
	}
}

// TestGitlinks reads indexes git wrote, in each version, against the
// gitlinks git itself lists.
func TestGitlinks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Missing(t, "git is not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	os.MkdirAll(filepath.Join(dir, "a", "deep"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "deep", "f"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "top"), []byte("x"), 0o644)
	git("add", "a", "top")
	for _, l := range []string{"mod", "a/deep/mod2", "z"} {
		git("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("ab", 20)+","+l)
	}
	for _, v := range []string{"2", "3", "4"} {
		git("update-index", "--index-version", v)
		data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := gitlinks(data)
		if err != nil {
			t.Fatalf("version %s: %v", v, err)
		}
		if want := []string{"a/deep/mod2", "mod", "z"}; !slices.Equal(got, want) {
			t.Errorf("version %s: got %q, want %q", v, got, want)
		}
	}
	if _, err := gitlinks([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05")); err == nil {
		t.Error("a truncated index was read")
	}
}

// hostGit runs git on the host as a user would, with no config of the
// user's own.
func hostGit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// nestedRepoLine makes, inside the sandbox, a repository sub whose
// fsmonitor would create marker, and adds it to the top-level index as a
// gitlink.
func nestedRepoLine(marker string) string {
	return `sh -c 'export GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@a GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@a
git init -q sub && echo x > sub/f && git -C sub add f && git -C sub commit -qm x &&
git -C sub config core.fsmonitor "touch ` + marker + `" && git add sub'`
}

// TestNestedRepoPutBack: a repository the command makes below the
// workspace, added to the top-level index as a gitlink, with a config that
// would have the host's git run a program, is removed with the gitlink,
// and the run fails naming them: the host's git status then runs nothing.
// The same layout made on the host shows that git status would.
func TestNestedRepoPutBack(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Missing(t, "git is not installed")
	}
	// The cross-check: on the host, git status runs the nested fsmonitor.
	control := filepath.Join(t.TempDir(), "control")
	os.Mkdir(control, 0o755)
	controlMarker := filepath.Join(filepath.Dir(control), "marker")
	if out, err := hostGit(t, control, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := exec.Command("sh", "-c", "cd "+control+" && "+strings.TrimSuffix(strings.TrimPrefix(nestedRepoLine(controlMarker), "sh -c '"), "'")).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	os.Remove(controlMarker)
	hostGit(t, control, "status")
	if _, err := os.Stat(controlMarker); err != nil {
		t.Fatalf("the cross-check failed: the host's git status did not run the nested fsmonitor: %v", err)
	}
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		if out, err := hostGit(t, ws, "init", "-q"); err != nil {
			t.Fatal(err, out)
		}
		marker := filepath.Join(filepath.Dir(ws), "marker")
		res := runLine(t, ws, nestedRepoLine(marker), Profile{Rung: rung})
		if res.Status != Failed || !strings.Contains(res.Reason, "sub/.git (made by the command; sub/.git/config sets core.fsmonitor): removed") ||
			!strings.Contains(res.Reason, "sub (a gitlink the command added to .git/index") {
			t.Fatalf("%+v", res)
		}
		if _, err := os.Lstat(filepath.Join(ws, "sub", ".git")); err == nil {
			t.Error("sub/.git is still there")
		}
		if out, err := hostGit(t, ws, "ls-files", "-s"); err != nil || strings.Contains(out, "160000") {
			t.Errorf("the gitlink is still in the index: %v %s", err, out)
		}
		hostGit(t, ws, "status")
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the host's git status ran the nested repository's fsmonitor")
		}
	})
}

// TestRepoMetadataPutBack: each other way of planting repository
// metadata git would obey, and changes to metadata that was there, are
// put back; metadata that runs nothing is left alone.
func TestRepoMetadataPutBack(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		for _, c := range []struct {
			name, line string
			gone       []string // paths the put-back removes
			reason     string
		}{
			{"a .git file naming a git directory in the workspace",
				`sh -c 'mkdir -p sub2 evil && printf "[core]\n\tfsmonitor = touch m\n" > evil/config && echo "gitdir: ../evil" > sub2/.git'`,
				[]string{"sub2/.git"}, "sub2/.git (made by the command; evil/config sets core.fsmonitor): removed"},
			{"a .git file whose git directory's name ends in a blank, which git keeps",
				`sh -c 'mkdir -p sub5 "g5 " && printf "[core]\n\tfsmonitor = touch m\n" > "g5 /config" && printf "gitdir: ../g5 \n" > sub5/.git'`,
				[]string{"sub5/.git"}, "sub5/.git (made by the command; g5 /config sets core.fsmonitor): removed"},
			{"a .git file naming a directory outside",
				`sh -c 'mkdir -p sub3 && echo "gitdir: /tmp/elsewhere" > sub3/.git'`,
				[]string{"sub3/.git"}, "sub3/.git names a git directory outside the workspace"},
			{"a .gitmodules running a command on update",
				`sh -c 'printf "[submodule \"x\"]\n\tpath = x\n\turl = https://example.com/x\n\tupdate = !touch m\n" > .gitmodules'`,
				[]string{".gitmodules"}, ".gitmodules sets submodule.x.update"},
			{"a .gitmodules with an ext:: url",
				`sh -c 'mkdir -p d && printf "[submodule \"x\"]\n\tpath = x\n\turl = ext::sh -c touch% m\n" > d/.gitmodules'`,
				[]string{"d/.gitmodules"}, "d/.gitmodules sets submodule.x.url"},
			{"a module's git directory",
				`sh -c 'mkdir -p .git/modules/x/hooks && printf "[core]\n\thooksPath = /tmp\n" > .git/modules/x/config && echo "ref: refs/heads/main" > .git/modules/x/HEAD'`,
				[]string{".git/modules/x"}, ".git/modules/x (made by the command; .git/modules/x/config sets core.hookspath): removed"},
			// The top-level .git/worktrees is protected whole
			// (TestWorktreesProtected); a nested repository's is not.
			{"another worktree's config, of a nested repository",
				`sh -c 'mkdir -p n/.git/worktrees/w && echo "[core]" > n/.git/config && printf "[core]
	pager = touch m
" > n/.git/worktrees/w/config.worktree'`,
				[]string{"n/.git"}, "n/.git (made by the command; n/.git/worktrees/w/config.worktree sets core.pager): removed"},
			{"a nested repository's hook",
				`sh -c 'mkdir -p n/.git/hooks && echo "[core]" > n/.git/config && printf "#!/bin/sh\ntouch m\n" > n/.git/hooks/post-checkout'`,
				[]string{"n/.git"}, "n/.git/hooks/post-checkout is a hook"},
		} {
			t.Run(c.name, func(t *testing.T) {
				ws := workspaceDir(t)
				res := runLine(t, ws, c.line, Profile{Rung: rung})
				if res.Status != Failed || !strings.Contains(res.Reason, c.reason) {
					t.Fatalf("%+v", res)
				}
				for _, g := range c.gone {
					if _, err := os.Lstat(filepath.Join(ws, g)); err == nil {
						t.Errorf("%s is still there", g)
					}
				}
			})
		}
		t.Run("changes to what was there", func(t *testing.T) {
			ws := workspaceDir(t)
			testenv.WriteFiles(t, ws, map[string]string{
				"lib/.git/config":         "[core]\n\tbare = false\n",
				"lib/.git/HEAD":           "ref: refs/heads/main\n",
				".gitmodules":             "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib\n",
				"lib/.git/hooks/x.sample": "sample",
			}, 0o600)
			res := runLine(t, ws, `sh -c 'printf "[alias]\n\tst = !touch m\n" >> lib/.git/config; printf "\tupdate = !touch m\n" >> .gitmodules; echo x > lib/.git/hooks/pre-commit; echo y > lib/.git/hooks/x.sample'`, Profile{Rung: rung})
			if res.Status != Failed || !strings.Contains(res.Reason, "lib/.git/config sets alias.st: put back") || !strings.Contains(res.Reason, ".gitmodules sets submodule.lib.update: put back") || !strings.Contains(res.Reason, "lib/.git/hooks/pre-commit is a hook: removed") {
				t.Fatalf("%+v", res)
			}
			for rel, want := range map[string]string{"lib/.git/config": "[core]\n\tbare = false\n", ".gitmodules": "[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib\n", "lib/.git/hooks/x.sample": "y\n"} {
				if data, _ := os.ReadFile(filepath.Join(ws, rel)); string(data) != want {
					t.Errorf("%s holds %q", rel, data)
				}
			}
			if _, err := os.Lstat(filepath.Join(ws, "lib/.git/hooks/pre-commit")); err == nil {
				t.Error("the planted hook is still there")
			}
		})
		t.Run("inert metadata", func(t *testing.T) {
			if _, err := exec.LookPath("git"); err != nil {
				testenv.Missing(t, "git is not installed")
			}
			ws := workspaceDir(t)
			res := runLine(t, ws, `sh -c 'GIT_CONFIG_GLOBAL=/dev/null git init -q inert && git -C inert config user.name x && git -C inert remote add origin https://example.com/x.git && printf "[submodule \"x\"]\n\tpath = x\n\turl = https://example.com/x\n" > .gitmodules'`, Profile{Rung: rung})
			if res.Status != OK {
				t.Fatalf("%+v", res)
			}
			if _, err := os.Stat(filepath.Join(ws, "inert", ".git", "config")); err != nil {
				t.Error(err)
			}
		})
	})
}

// TestUsersOwnKeysKept: executing variables that were in a nested
// repository's config before the run (git lfs's filters, say) are the
// user's: a run changing something else there is not put back.
func TestUsersOwnKeysKept(t *testing.T) {
	eachRung(t, func(t *testing.T, rung Rung) {
		ws := workspaceDir(t)
		testenv.WriteFiles(t, ws, map[string]string{
			"lib/.git/config": "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n",
			"lib/.git/HEAD":   "ref: refs/heads/main\n",
		}, 0o600)
		res := runLine(t, ws, `sh -c 'printf "[user]\n\tname = x\n" >> lib/.git/config'`, Profile{Rung: rung})
		if res.Status != OK {
			t.Fatalf("%+v", res)
		}
		res = runLine(t, ws, `sh -c 'printf "[filter \"lfs\"]\n\tclean = touch m\n" >> lib/.git/config'`, Profile{Rung: rung})
		if res.Status != Failed || !strings.Contains(res.Reason, "lib/.git/config sets filter.lfs.clean: put back") {
			t.Fatalf("%+v", res)
		}
		if data, _ := os.ReadFile(filepath.Join(ws, "lib/.git/config")); string(data) != "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n[user]\n\tname = x\n" {
			t.Errorf("lib/.git/config holds %q", data)
		}
	})
}

// TestScanReusesUnchanged: the scan after a run reads again only the
// directories whose change time moved (and those changed too recently to
// tell), and so finds what was made in any of them.
func TestScanReusesUnchanged(t *testing.T) {
	ws := t.TempDir()
	testenv.WriteFiles(t, ws, map[string]string{"a/b/c/f": "x", "d/f": "x", "e/f": "x"}, 0o600)
	time.Sleep(trustAfter + 100*time.Millisecond)
	pre, err := scanRepos(ws, true, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteFiles(t, ws, map[string]string{"a/b/c/new/.git/config": "[core]\n\tfsmonitor = touch m\n", "e/g": "y"}, 0o600)
	now, err := scanRepos(ws, false, pre.listed, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for dir, reused := range map[string]bool{"": true, "a": true, "a/b": true, "a/b/c": false, "d": true, "e": false} {
		if got := &now.listed[dir].entries[0] == &pre.listed[dir].entries[0]; got != reused {
			t.Errorf("%q: reused %v, want %v", dir, got, reused)
		}
	}
	if !now.Units["a/b/c/new/.git"] {
		t.Fatal("the new repository was not found")
	}
	if got := pre.putBack(); len(got) != 1 || !strings.Contains(got[0], "a/b/c/new/.git (made by the command") {
		t.Fatalf("put back %q", got)
	}
}

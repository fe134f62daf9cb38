package policy

import (
	"fmt"
	"slices"
	"strings"
)

// The class table's refinements for the go command and the node package managers.

// Go.

// goValueFlags are the go command's build and test flags that take a value
// as the next word.
var goValueFlags = setOf("o", "p", "asmflags", "buildmode", "buildvcs", "compiler", "gccgoflags", "gcflags",
	"installsuffix", "ldflags", "mod", "modfile", "overlay", "pgo", "pkgdir", "tags", "toolexec", "exec",
	"vettool", "coverpkg", "covermode", "coverprofile", "cpuprofile", "memprofile", "memprofilerate",
	"blockprofile", "blockprofilerate", "mutexprofile", "mutexprofilefraction", "trace", "outputdir", "run",
	"skip", "bench", "benchtime", "count", "cpu", "parallel", "timeout", "shuffle", "fuzz", "fuzztime",
	"fuzzminimizetime", "list", "fullpath", "f", "reuse")

// goReadOnlyFlags are the flags of go's read-only commands, each with
// what its value is; go list also takes the build flags. A flag not
// listed makes the command unknown.
var goReadOnlyFlags = map[string]map[string]valKind{
	"list": {"f": valWord, "json": valWord, "m": valWord, "u": valWord, "versions": valWord, "retracted": valWord,
		"reuse": valRead, "deps": valWord, "test": valWord, "e": valWord, "find": valWord, "export": valWord,
		"compiled": valWord, "modfile": valRead, "overlay": valArgs, "pgo": valRead, "C": valWord},
	"env":     {"json": valWord, "changed": valWord, "u": valWord, "w": valWord},
	"doc":     {"all": valWord, "c": valWord, "cmd": valWord, "short": valWord, "src": valWord, "u": valWord},
	"version": {"m": valWord, "v": valWord, "json": valWord},
	"help":    {},
}

// goBuildFlags are the build flags go list takes.
var goBuildFlags = setOf("a", "n", "p", "race", "msan", "asan", "cover", "covermode", "coverpkg", "v", "work", "x",
	"asmflags", "buildmode", "buildvcs", "compiler", "gccgoflags", "gcflags", "installsuffix", "ldflags",
	"linkshared", "mod", "modcacherw", "pkgdir", "tags", "trimpath", "toolexec", "exec", "vettool")

// goOutputFlags name files the go command writes.
var goOutputFlags = setOf("o", "coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile", "trace", "outputdir")

var goClasses = map[string]Class{
	"version": ReadOnly, "list": ReadOnly, "doc": ReadOnly, "help": ReadOnly, "env": ReadOnly,
	"build": WorkspaceMutating, "test": WorkspaceMutating, "vet": WorkspaceMutating, "run": WorkspaceMutating,
	"generate": WorkspaceMutating, "install": WorkspaceMutating, "mod": WorkspaceMutating,
	"get": WorkspaceMutating, "fmt": WorkspaceMutating, "clean": WorkspaceMutating, "fix": WorkspaceMutating,
	"work": WorkspaceMutating,
}

// refineGo classifies by subcommand, and makes -exec, -toolexec and
// -vettool shell-complex: they name a program the go command runs instead
// of, or around, its own.
func refineGo(c *classCall) {
	args := c.args
	if len(args) >= 2 && args[0] == "-C" {
		args = args[2:]
	} else if len(args) >= 1 && strings.HasPrefix(args[0], "-C=") {
		args = args[1:]
	}
	if len(args) == 0 {
		c.set(ReadOnly, "go without a command prints its usage")
		return
	}
	sub, rest := args[0], args[1:]
	class, ok := goClasses[sub]
	if !ok {
		c.set(Unknown, "go "+sub+" is not classified")
		return
	}
	c.set(class, "go "+sub)
	switch class {
	case ReadOnly:
		c.f.Reason = "go " + sub + " only prints"
	case WorkspaceMutating:
		c.f.Reason = "go " + sub + " builds, tests or changes the module"
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" || a == "-args" || a == "--args" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if sub == "run" {
				break
			}
			if sub == "version" {
				c.reads(a) // go version FILE reads the binary's build information
			}
			if sub == "list" && (strings.Contains(a, "@") || slices.Contains(rest[:i], "-m")) {
				c.raise(Unknown, "go list "+a+" may look modules up over the network")
			}
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if !hasValue && goValueFlags[name] && i+1 < len(rest) {
			i++
			value, hasValue = rest[i], true
		}
		if known, ok := goReadOnlyFlags[sub]; ok && class == ReadOnly {
			kind, listed := known[name]
			if !listed {
				listed = goBuildFlags[name] && sub == "list"
			}
			switch {
			case !listed:
				c.raise(Unknown, fmt.Sprintf("%s is not a flag rein knows go %s to have, so it is not known to be read-only", a, sub))
			case kind == valRead && hasValue:
				c.reads(value)
			case kind == valArgs:
				if hasValue {
					c.reads(value)
				}
				c.raise(Unknown, "go "+sub+" -"+name+" reads files named in a file rein cannot see")
			}
		}
		switch {
		case sub == "list" && (name == "export" || name == "compiled"):
			c.raise(Unknown, "go list -"+name+" builds the packages: cgo and the C compiler run, and print what they read")
		case sub == "list" && (name == "u" || name == "versions" || name == "retracted" || name == "reuse"):
			c.raise(Unknown, "go list -"+name+" queries the module proxy over the network")
		case sub == "env" && (name == "w" || name == "u"):
			c.raise(ShellComplex, "go env -w changes the go command's configuration")
		case name == "exec" || name == "toolexec" || name == "vettool":
			c.raise(ShellComplex, "go -"+name+" runs a program of its own")
		case goOutputFlags[name] && hasValue:
			c.writes(value)
		}
	}
}

// Node package managers.

// npmMutating are npm commands that run package scripts or change
// node_modules and the lock file.
var npmMutating = setOf("test", "t", "tst", "run", "run-script", "rum", "urn", "start", "stop", "restart",
	"install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal", "isntall", "add", "ci",
	"clean-install", "ic", "install-clean", "isntall-clean", "install-test", "it", "install-ci-test", "cit",
	"update", "up", "upgrade", "udpate", "uninstall", "remove", "rm", "r", "un", "unlink", "link", "ln",
	"rebuild", "rb", "dedupe", "ddp", "prune", "pack", "publish")

// npmValueOptions take the next word as their value.
var npmValueOptions = setOf("--prefix", "-w", "--workspace", "--registry", "--cache", "--userconfig",
	"--globalconfig", "--loglevel", "-C", "--dir")

// packageManagerCommand returns the first word that is not an option.
func packageManagerCommand(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case npmValueOptions[a]:
			i++
		case !strings.HasPrefix(a, "-"):
			return a
		}
	}
	return ""
}

func refineNpm(c *classCall) {
	sub := packageManagerCommand(c.args)
	switch {
	case sub == "exec" || sub == "x":
		c.set(ShellComplex, "npm "+sub+" runs a package fetched by name")
	case npmMutating[sub]:
		c.set(WorkspaceMutating, "npm "+sub+" runs package scripts or changes node_modules")
	default:
		c.set(Unknown, "npm "+sub+" is not classified")
	}
}

func refinePnpm(c *classCall) {
	sub := packageManagerCommand(c.args)
	switch {
	case sub == "dlx" || sub == "exec":
		c.set(ShellComplex, c.name+" "+sub+" runs a command the matcher cannot see")
	case npmMutating[sub] || c.name == "yarn" && sub == "":
		c.set(WorkspaceMutating, c.name+" "+sub+" runs package scripts or changes node_modules")
	default:
		c.set(Unknown, c.name+" "+sub+" is not classified")
	}
}

package policy

// netPresets name the hosts of common registries, so a policy can write
// presets = ["go"] instead of listing them. The egress proxy grants a
// preset's hosts like net allow rules.
var netPresets = map[string][]string{
	"go":        {"proxy.golang.org:443", "sum.golang.org:443", "index.golang.org:443", "storage.googleapis.com:443"},
	"npm":       {"registry.npmjs.org:443", "*.npmjs.org:443"},
	"pypi":      {"pypi.org:443", "files.pythonhosted.org:443"},
	"crates":    {"crates.io:443", "index.crates.io:443", "static.crates.io:443"},
	"github":    {"github.com:443", "api.github.com:443", "codeload.github.com:443", "objects.githubusercontent.com:443", "raw.githubusercontent.com:443"},
	"debian":    {"deb.debian.org:443", "deb.debian.org:80", "security.debian.org:443", "security.debian.org:80"},
	"deno":      {"deno.land:443", "jsr.io:443", "npm.jsr.io:443", "registry.npmjs.org:443"},
	"maven":     {"repo.maven.apache.org:443", "repo1.maven.org:443"},
	"gradle":    {"services.gradle.org:443", "downloads.gradle.org:443", "plugins.gradle.org:443", "plugins-artifacts.gradle.org:443"},
	"rubygems":  {"rubygems.org:443", "index.rubygems.org:443"},
	"packagist": {"repo.packagist.org:443", "packagist.org:443"},
	"nuget":     {"api.nuget.org:443", "globalcdn.nuget.org:443"},
	"hex":       {"hex.pm:443", "repo.hex.pm:443", "builds.hex.pm:443"},
}

var presetNames = []string{"crates", "debian", "deno", "github", "go", "gradle", "hex", "maven", "npm", "nuget", "packagist", "pypi", "rubygems"}

func knownPreset(name string) bool { _, ok := netPresets[name]; return ok }

// PresetHosts returns the host patterns of a preset, or nil if unknown.
func PresetHosts(name string) []string { return netPresets[name] }

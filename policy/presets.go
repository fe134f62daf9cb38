package policy

// netPresets name the hosts of common registries, so a policy can write
// presets = ["go"] instead of listing them. The egress proxy grants a
// preset's hosts like net allow rules.
var netPresets = map[string][]string{
	"go":     {"proxy.golang.org:443", "sum.golang.org:443", "index.golang.org:443", "storage.googleapis.com:443"},
	"npm":    {"registry.npmjs.org:443", "*.npmjs.org:443"},
	"pypi":   {"pypi.org:443", "files.pythonhosted.org:443"},
	"crates": {"crates.io:443", "index.crates.io:443", "static.crates.io:443"},
	"github": {"github.com:443", "api.github.com:443", "codeload.github.com:443", "objects.githubusercontent.com:443", "raw.githubusercontent.com:443"},
	"debian": {"deb.debian.org:443", "deb.debian.org:80", "security.debian.org:443", "security.debian.org:80"},
}

var presetNames = []string{"crates", "debian", "github", "go", "npm", "pypi"}

func knownPreset(name string) bool { _, ok := netPresets[name]; return ok }

// PresetHosts returns the host patterns of a preset, or nil if unknown.
func PresetHosts(name string) []string { return netPresets[name] }

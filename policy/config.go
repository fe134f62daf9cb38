package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/reinhq/rein/limits"
	"github.com/reinhq/rein/shell"
	"github.com/reinhq/rein/workspace"
)

// fileConfig is the policy file of every scope. Unknown keys are errors.
type fileConfig struct {
	Mode             string     `toml:"mode"`
	RepeatedRefusals *int       `toml:"repeated_refusals"`
	Exec             actRules   `toml:"exec"`
	Read             actRules   `toml:"read"`
	Write            actRules   `toml:"write"`
	Delete           actRules   `toml:"delete"`
	Net              netRules   `toml:"net"`
	Tool             actRules   `toml:"tool"`
	Rule             []longRule `toml:"rule"`
	Workspace        struct {
		ReadOnly  *bool    `toml:"read_only"`
		Protected []string `toml:"protected"`
	} `toml:"workspace"`
	Sandbox struct {
		Rung       string   `toml:"rung"`
		Network    string   `toml:"network"`
		Timeout    string   `toml:"timeout"`
		MaxTimeout string   `toml:"max_timeout"`
		ReadPaths  []string `toml:"read_paths"`
	} `toml:"sandbox"`
	Limits struct {
		Memory     string `toml:"memory"`
		Processes  *int64 `toml:"processes"`
		CPUSeconds *int64 `toml:"cpu_seconds"`
		OpenFiles  *int64 `toml:"open_files"`
		FileSize   string `toml:"file_size"`
		TmpSize    string `toml:"tmp_size"`
		// ResultsPerRun bounds what a run's result store keeps on the
		// host (tool.Results).
		ResultsPerRun string `toml:"results_per_run"`
		// SessionTrace bounds what a launched session records.
		SessionTrace string `toml:"session_trace"`
	} `toml:"limits"`
	Env struct {
		Pass    []string `toml:"pass"`
		Secrets []string `toml:"secrets"`
		Set     []string `toml:"set"`
	} `toml:"env"`
	Run      runConfig        `toml:"run"`
	Provider []providerConfig `toml:"provider"`
	Web      struct {
		SearchURL string `toml:"search_url"`
	} `toml:"web"`
	Trace struct {
		KeyFile      string `toml:"key_file"`
		OTLPEndpoint string `toml:"otlp_endpoint"`
		OTLPContent  *bool  `toml:"otlp_content"`
	} `toml:"trace"`
}

type actRules struct {
	Allow []string `toml:"allow"`
	Ask   []string `toml:"ask"`
	Deny  []string `toml:"deny"`
}

type netRules struct {
	actRules
	Presets []string `toml:"presets"`
}

type longRule struct {
	Act      string   `toml:"act"`
	Effect   string   `toml:"effect"`
	Pattern  string   `toml:"pattern"`
	Match    []string `toml:"match"`
	NotMatch []string `toml:"not_match"`
}

// ConfigError is a policy file that cannot be used, with where and why.
// A policy that fails to load stops the program; it never falls back.
type ConfigError struct {
	File string
	Line int // 0 when the error is about the whole file
	Key  string
	Err  error
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": %s", e.Key)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Scope names where a policy file comes from.
type Scope struct {
	Layer Layer
	// Path is the file consulted.
	Path string
	// Named is set when the path was given by flag or environment; a
	// named file must exist.
	Named bool
	// Root, for the project file in its default place, is the workspace
	// root as the user named it (absolute, cleaned, links not resolved):
	// the file is opened beneath it with no link followed.
	Root string
}

// Source reports what became of one scope's file.
type Source struct {
	Layer Layer  `json:"layer"`
	Path  string `json:"path"`
	// State is "loaded", "absent", "trusted", or "untrusted" (a project
	// file whose allow rules and widening settings were not applied).
	State string `json:"state"`
	// Note says why a project file is untrusted and what to run.
	Note string `json:"note,omitempty"`
}

// Options says where to find each scope's policy file and what the command
// line adds. Empty fields take the defaults of the spec.
type Options struct {
	// Workspace is the workspace root; it is resolved physically.
	Workspace string
	// Home is the user's home directory; defaults to $HOME.
	Home string
	// SandboxHome is the HOME the decided lines see when rein's sandbox
	// runs them: a directory private to the run, which the line's ~ names
	// (the parser expands ~ to it) and which a path under it means. Paths
	// there are decided as that private HOME, never as Home: reads and
	// writes are allowed like the workspace's (but in safe mode, which
	// writes nothing), the protected set's ~/ entries hold there too, and
	// a cd is allowed to HOME itself. Empty means DefaultSandboxHome.
	SandboxHome string
	// OnHost says the decided lines run on the host, outside rein's
	// sandbox (a Claude Code hook): ~ is Home, and no path is a sandbox's
	// private HOME. SandboxHome must then be empty.
	OnHost bool
	// OrgFile, UserFile, ProjectFile name a scope's file explicitly (the
	// --org-policy, --user-policy and --project-policy flags). Otherwise
	// REIN_ORG_POLICY, REIN_USER_POLICY and REIN_PROJECT_POLICY, then the
	// default locations, are used.
	OrgFile, UserFile, ProjectFile string
	// Mode, when set, overrides every file's mode (the --mode flag).
	Mode *Mode
	// Rules are the flags layer's rules.
	Rules []Rule
	// Network, when set, overrides every file's sandbox.network (the
	// --network flag): off, proxy or full.
	Network string
	// ReadPaths are the flags layer's sandbox.read_paths (--read-path).
	ReadPaths []string
	// Verification are path patterns no write or delete of the run may
	// touch (an agent run's protect globs), as deny rules in the
	// verification layer.
	Verification []string
	// NoFiles reads no policy file: the builtin layer and the flags only
	// (rein sandbox, whose only net rules are its --allow-host flags).
	NoFiles bool
	// Getenv reads the environment; defaults to os.Getenv.
	Getenv func(string) string
}

// Setting is one merged scalar of the policy, with the file that set it.
type Setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Layer Layer  `json:"layer"`
	File  string `json:"file,omitempty"`
}

// Limits are the resource limits the configuration asks for, zero meaning
// unset: the sandbox's own type (limits.Limits), handed over as it is.
type Limits = limits.Limits

// SandboxSettings are the execution settings of the policy file.
type SandboxSettings struct {
	Rung       string
	Network    string
	Timeout    time.Duration
	MaxTimeout time.Duration
	// ReadPaths are host paths every command may read, at their own path
	// (a toolchain installed outside the system directories): absolute,
	// existing, never protected. A project file adds them only when
	// trusted.
	ReadPaths []string
}

// Defaults of the spec.
const (
	// DefaultSandboxHome is where rein's sandbox mounts the run's private
	// HOME on the bwrap rung (sandbox/bwrap.SandboxHome); the other rungs
	// move the plan's paths there to their own private directory.
	DefaultSandboxHome      = "/run/rein/home"
	DefaultTimeout          = 180 * time.Second
	DefaultMaxTimeout       = 600 * time.Second
	DefaultRepeatedRefusals = 5
)

// Policy is a loaded, compiled policy. It is safe for concurrent checks.
type Policy struct {
	Mode      Mode
	Workspace string
	Home      string
	// SandboxHome is the private HOME of the sandbox the lines run in
	// (Options.SandboxHome), clean and absolute, or empty when they run
	// on the host (Options.OnHost). A line run by the policy's caller must
	// be parsed with it as shell.Parser.Home.
	SandboxHome string
	ReadOnly    bool
	// getenv reads the environment (Options.Getenv).
	getenv func(string) string

	Sandbox SandboxSettings
	Limits  Limits
	// ResultsPerRun bounds the bytes a run's whole results keep on the
	// host ([limits] results_per_run); 0 is the tool layer's default.
	ResultsPerRun int64
	// SessionTrace bounds the bytes a launched session records in the
	// trace ([limits] session_trace); 0 is the launcher's default.
	SessionTrace int64
	// Run and Providers are the agent's settings ([run], [[provider]]).
	Run       RunSettings
	Providers []ProviderSetting
	// WebSearchURL is the search backend of search_internet, a
	// SearxNG-compatible JSON API ([web] search_url of the org or user
	// file; a project file cannot point it anywhere); "" for none.
	WebSearchURL string
	// TraceKeyFile is the trace key's file ([trace] key_file of the org
	// or user policy; REIN_TRACE_KEY comes first): the one key every
	// writer of a shared trace is given.
	TraceKeyFile string
	// OTLPEndpoint is the OpenTelemetry collector every run is exported
	// to when it ends ([trace] otlp_endpoint of the org or user policy,
	// an http(s) URL; never the environment's OTEL_* variables, which a
	// repository can set through an agent's settings); "" for none.
	OTLPEndpoint string
	// OTLPContent exports, redacted, the arguments, observations and
	// model requests and responses along with the metadata ([trace]
	// otlp_content of the org or user policy).
	OTLPContent bool
	NetPresets  []string
	EnvPass     []string
	EnvSecrets  []string
	// EnvSet names the variables, beyond rein's table of harmless ones, a
	// line may set before a command without a question ([env] set of the
	// org and user files; a name, or a pattern with *).
	EnvSet           []string
	RepeatedRefusals int

	// Rules are every applied rule, strongest layer first.
	Rules []*Rule
	// Sources are the files consulted, in layer order.
	Sources []Source
	// Settings are the merged scalars, with the file that set each.
	Settings []Setting

	rules          map[Act]map[Decision]*ruleSet
	protected      []protectedRule
	protectedIndex globIndex
}

// DefaultScopes returns where each scope's file is looked for.
func DefaultScopes(o Options) []Scope {
	env := o.Getenv
	if env == nil {
		env = os.Getenv
	}
	pick := func(layer Layer, flag, envName, def string) Scope {
		switch {
		case flag != "":
			return Scope{Layer: layer, Path: flag, Named: true}
		case env(envName) != "":
			return Scope{Layer: layer, Path: env(envName), Named: true}
		}
		return Scope{Layer: layer, Path: def}
	}
	home := o.Home
	if home == "" {
		home = env("HOME")
	}
	cfg := env("XDG_CONFIG_HOME")
	if cfg == "" && home != "" {
		cfg = filepath.Join(home, ".config")
	}
	user := ""
	if cfg != "" {
		user = filepath.Join(cfg, "rein", "policy.toml")
	}
	project, root := "", ""
	if o.Workspace != "" {
		root = projectKey(o.Workspace)
		project = filepath.Join(root, ".rein", "policy.toml")
	}
	ps := pick(LayerProject, o.ProjectFile, "REIN_PROJECT_POLICY", project)
	if !ps.Named {
		ps.Root = root
	}
	return []Scope{
		pick(LayerOrg, o.OrgFile, "REIN_ORG_POLICY", "/etc/rein/policy.toml"),
		pick(LayerUser, o.UserFile, "REIN_USER_POLICY", user),
		ps,
	}
}

// Load reads every scope's policy file, checks it, and compiles the merged
// policy. Any error in any file is returned with its file, line and key.
func Load(o Options) (*Policy, error) {
	env := o.Getenv
	if env == nil {
		env = os.Getenv
	}
	if o.Home == "" {
		o.Home = env("HOME")
	}
	if o.Home != "" && !filepath.IsAbs(o.Home) {
		// ~ in a rule or a path would mean a directory relative to wherever
		// rein runs.
		return nil, fmt.Errorf("the home directory %q (HOME) is not an absolute path", o.Home)
	}
	p := &Policy{
		Mode:             ModeAsk,
		Home:             filepath.Clean(o.Home),
		Sandbox:          SandboxSettings{Rung: "auto", Network: "off", Timeout: DefaultTimeout, MaxTimeout: DefaultMaxTimeout},
		RepeatedRefusals: DefaultRepeatedRefusals,
		rules:            map[Act]map[Decision]*ruleSet{},
	}
	if o.Home == "" {
		p.Home = ""
	}
	switch {
	case o.OnHost && o.SandboxHome != "":
		return nil, fmt.Errorf("policy: a sandbox HOME (%q) was given for lines that run on the host: set one of SandboxHome and OnHost", o.SandboxHome)
	case o.OnHost:
	case o.SandboxHome == "":
		p.SandboxHome = DefaultSandboxHome
	case !filepath.IsAbs(o.SandboxHome) || filepath.Clean(o.SandboxHome) == "/":
		return nil, fmt.Errorf("policy: the sandbox HOME %q is not an absolute directory below the root", o.SandboxHome)
	default:
		p.SandboxHome = filepath.Clean(o.SandboxHome)
	}
	p.getenv = env
	if o.Workspace != "" {
		ws, err := filepath.Abs(o.Workspace)
		if err == nil {
			ws, err = filepath.EvalSymlinks(ws)
		}
		if err != nil {
			return nil, fmt.Errorf("policy: workspace %q: %w", o.Workspace, err)
		}
		p.Workspace = ws
	}
	if h := p.SandboxHome; h != "" && p.Workspace != "" && (workspace.Within(h, p.Workspace) || workspace.Within(p.Workspace, h)) {
		return nil, fmt.Errorf("policy: the sandbox HOME %q and the workspace %q overlap: a path in one would be decided as the other", h, p.Workspace)
	}
	for _, a := range acts {
		p.rules[a] = map[Decision]*ruleSet{Allow: {}, Ask: {}, Deny: {}}
	}
	for _, b := range builtinProtected {
		if err := p.addProtected(b.pattern, b.kind, b.except, Rule{Layer: LayerBuiltin}); err != nil {
			return nil, fmt.Errorf("policy: builtin protected set: %w", err)
		}
	}
	p.setting("mode", p.Mode.String(), LayerBuiltin, "")
	scopes := DefaultScopes(o)
	trust, err := loadTrust(trustFile(scopes))
	if o.NoFiles {
		scopes, trust, err = nil, nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, sc := range scopes {
		if err := p.loadScope(sc, trust); err != nil {
			return nil, err
		}
	}
	for i := range o.Rules {
		r := o.Rules[i]
		r.Layer = LayerFlags
		if err := p.addRule(&r); err != nil {
			return nil, fmt.Errorf("policy: rule %q from the command line: %w", r.Pattern, err)
		}
	}
	for _, g := range o.Verification {
		for _, act := range []Act{ActWrite, ActDelete} {
			r := Rule{Act: act, Effect: Deny, Pattern: g, Layer: LayerVerification}
			if err := p.addRule(&r); err != nil {
				return nil, fmt.Errorf("policy: protect %q: %w", g, err)
			}
		}
	}
	if o.Mode != nil {
		p.Mode = *o.Mode
		p.setting("mode", p.Mode.String(), LayerFlags, "")
	}
	if o.Network != "" {
		if !slices.Contains(networkModes, o.Network) {
			return nil, fmt.Errorf("policy: --network %q: use %s", o.Network, strings.Join(networkModes, ", "))
		}
		p.Sandbox.Network = o.Network
		p.setting("sandbox.network", o.Network, LayerFlags, "")
	}
	for _, raw := range o.ReadPaths {
		rp, err := p.readPath(raw)
		if err != nil {
			return nil, fmt.Errorf("policy: --read-path: %w", err)
		}
		if !slices.Contains(p.Sandbox.ReadPaths, rp) {
			p.Sandbox.ReadPaths = append(p.Sandbox.ReadPaths, rp)
		}
		p.setting("sandbox.read_paths", strings.Join(p.Sandbox.ReadPaths, ", "), LayerFlags, "")
	}
	if p.Sandbox.Timeout > p.Sandbox.MaxTimeout {
		return nil, fmt.Errorf("policy: sandbox.timeout %s is above sandbox.max_timeout %s", p.Sandbox.Timeout, p.Sandbox.MaxTimeout)
	}
	return p, nil
}

func (p *Policy) setting(key, value string, l Layer, file string) {
	for i := range p.Settings {
		if p.Settings[i].Key == key {
			p.Settings[i] = Setting{key, value, l, file}
			return
		}
	}
	p.Settings = append(p.Settings, Setting{key, value, l, file})
}

func (p *Policy) addProtected(pattern string, kind protection, except []string, r Rule) error {
	g, err := anchorGlob(pattern, p.Home, p.Workspace)
	if err != nil {
		// A ~ pattern without HOME or a relative one without a workspace
		// cannot match anything here; it is not an error of the file.
		if strings.Contains(err.Error(), "needs") {
			return nil
		}
		return err
	}
	var ex []string
	for _, e := range except {
		eg, err := anchorGlob(e, p.Home, p.Workspace)
		if err != nil {
			return err
		}
		ex = append(ex, eg)
	}
	r.Pattern = pattern
	r.Effect = Deny
	r.Act = ActWrite
	if kind == protectSecret {
		r.Act = ActRead
	}
	p.protectedIndex.add(g, len(p.protected))
	p.protected = append(p.protected, protectedRule{rule: r, glob: g, kind: kind, except: ex})
	// Where the pattern's fixed part passes a link (HOME itself, or ~/.aws
	// kept elsewhere by a dotfiles manager), it also protects where the
	// link leads, which a command can name instead.
	if rg := physicalGlob(g); rg != g {
		rex := make([]string, len(ex))
		for i, e := range ex {
			rex[i] = physicalGlob(e)
		}
		p.protectedIndex.add(rg, len(p.protected))
		p.protected = append(p.protected, protectedRule{rule: r, glob: rg, kind: kind, except: rex})
	}
	return nil
}

// physicalGlob is the glob g with its fixed leading part resolved through
// links, as far as that part exists.
func physicalGlob(g string) string {
	lit := globPrefix(g)
	dir := strings.TrimSuffix(lit, "/")
	rest := g[len(dir):]
	// The longest existing ancestor is resolved; what does not exist yet
	// stays as written.
	for dir != "" && dir != "/" {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			if real == dir {
				return g
			}
			return real + rest
		}
		i := strings.LastIndexByte(dir, '/')
		dir, rest = dir[:i], dir[i:]+rest
	}
	return g
}

func (p *Policy) addRule(r *Rule) error {
	if r.Pattern == "" {
		return errors.New("empty pattern")
	}
	if err := p.rules[r.Act][r.Effect].add(r, p.Home, p.Workspace); err != nil {
		return err
	}
	if err := p.checkExamples(r); err != nil {
		return err
	}
	p.Rules = append(p.Rules, r)
	return nil
}

// checkExamples tests a rule against its own examples: an exec example is
// a line, tested as its first stage would be.
func (p *Policy) checkExamples(r *Rule) error {
	one := &ruleSet{}
	if err := one.add(r, p.Home, p.Workspace); err != nil {
		return err
	}
	matches := func(ex string) bool {
		switch {
		case r.Act == ActExec:
			line, err := shell.Parser{Home: p.Home}.Parse(ex)
			if err != nil || len(line.Stages()) == 0 || line.Stages()[0].Kind != shell.Command {
				return one.matchString(ex) != nil
			}
			return one.matchString(execStrings(line.Stages()[0].Argv)...) != nil
		case r.Act.isPath():
			g, err := anchorGlob(ex, p.Home, p.Workspace)
			return err == nil && one.matchPath(g) != nil
		case r.Act == ActNet:
			return netExample(r.Pattern, r.Effect, ex)
		}
		return one.matchString(ex) != nil
	}
	for _, ex := range r.Match {
		if !matches(ex) {
			return fmt.Errorf("pattern %q does not match its example %q", r.Pattern, ex)
		}
	}
	for _, ex := range r.NotMatch {
		if matches(ex) {
			return fmt.Errorf("pattern %q matches %q, which it must not match", r.Pattern, ex)
		}
	}
	return nil
}

// loadScope reads one scope's file and applies it.
func (p *Policy) loadScope(sc Scope, trust map[string]string) error {
	src := Source{Layer: sc.Layer, Path: sc.Path}
	if sc.Path == "" {
		return nil
	}
	data, err := readPolicyFile(sc)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !sc.Named:
		src.State = "absent"
		p.Sources = append(p.Sources, src)
		return nil
	case err != nil:
		return &ConfigError{File: sc.Path, Err: fmt.Errorf("cannot read the %s policy: %w", sc.Layer, err)}
	}
	cfg, pos, err := decode(sc.Path, data)
	if err != nil {
		return err
	}
	src.State = "loaded"
	trusted := true
	if sc.Layer == LayerProject {
		trusted, src.State, src.Note = projectTrust(sc.Path, data, trust)
	}
	p.Sources = append(p.Sources, src)
	a := applier{p: p, file: sc.Path, layer: sc.Layer, pos: pos, narrowOnly: !trusted}
	return a.apply(cfg)
}

// decode parses a policy file strictly and records the line of every key
// and array element for later errors.
func decode(file string, data []byte) (*fileConfig, positions, error) {
	var cfg fileConfig
	d := toml.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&cfg); err != nil {
		var sm *toml.StrictMissingError
		if errors.As(err, &sm) && len(sm.Errors) > 0 {
			e := sm.Errors[0]
			row, _ := e.Position()
			return nil, nil, &ConfigError{File: file, Line: row, Key: strings.Join(e.Key(), "."), Err: errors.New("unknown key")}
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, nil, &ConfigError{File: file, Line: row, Key: strings.Join(de.Key(), "."), Err: errors.New(strings.TrimPrefix(de.Error(), "toml: "))}
		}
		return nil, nil, &ConfigError{File: file, Err: err}
	}
	return &cfg, keyPositions(data), nil
}

// positions maps "table.key" and "table.key[i]" (and "rule[i]") to lines.
type positions map[string]int

func (ps positions) line(key string) int {
	if l, ok := ps[key]; ok {
		return l
	}
	if i := strings.LastIndexByte(key, '['); i > 0 {
		return ps.line(key[:i])
	}
	if i := strings.LastIndexByte(key, '.'); i > 0 {
		return ps.line(key[:i])
	}
	return 0
}

func keyPositions(data []byte) positions {
	ps := positions{}
	var up unstable.Parser
	up.Reset(data)
	table := ""
	arrays := map[string]int{}
	lineOf := func(r unstable.Range) int {
		if int(r.Offset)+int(r.Length) > len(data) {
			return 0
		}
		return up.Shape(r).Start.Line
	}
	keyOf := func(n *unstable.Node) (string, int) {
		var parts []string
		line := 0
		it := n.Key()
		for it.Next() {
			k := it.Node()
			parts = append(parts, string(k.Data))
			if line == 0 {
				line = lineOf(k.Raw)
			}
		}
		return strings.Join(parts, "."), line
	}
	for up.NextExpression() {
		e := up.Expression()
		switch e.Kind {
		case unstable.Table:
			k, l := keyOf(e)
			table = k
			ps[k] = l
		case unstable.ArrayTable:
			k, l := keyOf(e)
			i := arrays[k]
			arrays[k] = i + 1
			table = fmt.Sprintf("%s[%d]", k, i)
			ps[table] = l
		case unstable.KeyValue:
			k, l := keyOf(e)
			if table != "" {
				k = table + "." + k
			}
			ps[k] = l
			if v := e.Value(); v != nil && v.Kind == unstable.Array {
				it := v.Children()
				for i := 0; it.Next(); i++ {
					if el := lineOf(it.Node().Raw); el > 0 {
						ps[fmt.Sprintf("%s[%d]", k, i)] = el
					}
				}
			}
		}
	}
	return ps
}

// applier applies one decoded file to the policy.
type applier struct {
	p          *Policy
	file       string
	layer      Layer
	pos        positions
	narrowOnly bool
}

func (a *applier) fail(key string, err error) error {
	return &ConfigError{File: a.file, Line: a.pos.line(key), Key: key, Err: err}
}

func (a *applier) apply(c *fileConfig) error {
	p := a.p
	if c.Mode != "" {
		m, err := ParseMode(c.Mode)
		if err != nil {
			return a.fail("mode", err)
		}
		// An untrusted project file may only choose a stricter mode.
		if !a.narrowOnly || m < p.Mode {
			p.Mode = m
			p.setting("mode", m.String(), a.layer, a.file)
		}
	}
	if c.RepeatedRefusals != nil {
		if *c.RepeatedRefusals < 1 {
			return a.fail("repeated_refusals", fmt.Errorf("must be at least 1, not %d", *c.RepeatedRefusals))
		}
		if !a.narrowOnly || *c.RepeatedRefusals < p.RepeatedRefusals {
			p.RepeatedRefusals = *c.RepeatedRefusals
			p.setting("repeated_refusals", strconv.Itoa(p.RepeatedRefusals), a.layer, a.file)
		}
	}
	for _, ar := range []struct {
		act Act
		r   actRules
	}{{ActExec, c.Exec}, {ActRead, c.Read}, {ActWrite, c.Write}, {ActDelete, c.Delete}, {ActNet, c.Net.actRules}, {ActTool, c.Tool}} {
		for _, er := range []struct {
			eff  Decision
			pats []string
		}{{Deny, ar.r.Deny}, {Ask, ar.r.Ask}, {Allow, ar.r.Allow}} {
			for i, pat := range er.pats {
				key := fmt.Sprintf("%s.%s[%d]", ar.act, er.eff, i)
				if err := a.rule(&Rule{Act: ar.act, Effect: er.eff, Pattern: pat}, key); err != nil {
					return err
				}
			}
		}
	}
	for i, lr := range c.Rule {
		key := fmt.Sprintf("rule[%d]", i)
		act := Act(lr.Act)
		if !slices.Contains(acts, act) {
			return a.fail(key+".act", fmt.Errorf("unknown act %q: use exec, read, write, delete, net or tool", lr.Act))
		}
		eff, err := parseDecision(lr.Effect)
		if err != nil {
			return a.fail(key+".effect", err)
		}
		r := &Rule{Act: act, Effect: eff, Pattern: lr.Pattern, Match: lr.Match, NotMatch: lr.NotMatch}
		if err := a.rule(r, key); err != nil {
			return err
		}
	}
	for _, name := range c.Net.Presets {
		if !knownPreset(name) {
			return a.fail("net.presets", fmt.Errorf("unknown preset %q: use one of %s", name, strings.Join(presetNames, ", ")))
		}
		if !a.narrowOnly {
			p.NetPresets = append(p.NetPresets, name)
		}
	}
	if c.Workspace.ReadOnly != nil && (!a.narrowOnly || *c.Workspace.ReadOnly) {
		p.ReadOnly = *c.Workspace.ReadOnly
		p.setting("workspace.read_only", strconv.FormatBool(p.ReadOnly), a.layer, a.file)
	}
	for i, pat := range c.Workspace.Protected {
		key := fmt.Sprintf("workspace.protected[%d]", i)
		if err := p.addProtected(pat, protectGenerated, nil, Rule{Layer: a.layer, File: a.file, Line: a.pos.line(key)}); err != nil {
			return a.fail(key, err)
		}
	}
	if err := a.sandbox(c); err != nil {
		return err
	}
	if err := a.limits(c); err != nil {
		return err
	}
	if err := a.run(c); err != nil {
		return err
	}
	for i, n := range c.Env.Set {
		key := fmt.Sprintf("env.set[%d]", i)
		if err := a.refuseRepository(key, "name variables a line sets unasked: they can change what a program runs", "put them in the user's policy file"); err != nil {
			return err
		}
		if !validEnvName(strings.ReplaceAll(n, "*", "X")) {
			return a.fail(key, fmt.Errorf("%q is not a variable's name (letters, digits and _, with * for any run of them)", n))
		}
		p.EnvSet = append(p.EnvSet, n)
	}
	if !a.narrowOnly {
		p.EnvPass = append(p.EnvPass, c.Env.Pass...)
		p.EnvSecrets = append(p.EnvSecrets, c.Env.Secrets...)
	}
	return nil
}

// rule adds one rule. A project file's allow rules apply only when the
// user trusted that exact file.
func (a *applier) rule(r *Rule, key string) error {
	r.Layer, r.File, r.Line = a.layer, a.file, a.pos.line(key)
	if a.narrowOnly && r.Effect == Allow {
		return nil
	}
	if err := a.p.addRule(r); err != nil {
		return a.fail(key, err)
	}
	return nil
}

var (
	rungs        = []string{"auto", "bwrap", "landlock", "none"}
	networkModes = []string{"off", "proxy", "full"}
)

func (a *applier) sandbox(c *fileConfig) error {
	p, s := a.p, c.Sandbox
	if s.Rung != "" {
		if !slices.Contains(rungs, s.Rung) {
			return a.fail("sandbox.rung", fmt.Errorf("unknown rung %q: use %s", s.Rung, strings.Join(rungs, ", ")))
		}
		if !a.narrowOnly || s.Rung != "none" {
			p.Sandbox.Rung = s.Rung
			p.setting("sandbox.rung", s.Rung, a.layer, a.file)
		}
	}
	if s.Network != "" {
		i := slices.Index(networkModes, s.Network)
		if i < 0 {
			return a.fail("sandbox.network", fmt.Errorf("unknown network mode %q: use %s", s.Network, strings.Join(networkModes, ", ")))
		}
		if !a.narrowOnly || i < slices.Index(networkModes, p.Sandbox.Network) {
			p.Sandbox.Network = s.Network
			p.setting("sandbox.network", s.Network, a.layer, a.file)
		}
	}
	for _, raw := range s.ReadPaths {
		if a.narrowOnly {
			break
		}
		rp, err := p.readPath(raw)
		if err != nil {
			return a.fail("sandbox.read_paths", err)
		}
		if !slices.Contains(p.Sandbox.ReadPaths, rp) {
			p.Sandbox.ReadPaths = append(p.Sandbox.ReadPaths, rp)
		}
		p.setting("sandbox.read_paths", strings.Join(p.Sandbox.ReadPaths, ", "), a.layer, a.file)
	}
	for _, d := range []struct {
		key string
		raw string
		dst *time.Duration
	}{{"sandbox.timeout", s.Timeout, &p.Sandbox.Timeout}, {"sandbox.max_timeout", s.MaxTimeout, &p.Sandbox.MaxTimeout}} {
		if d.raw == "" {
			continue
		}
		v, err := time.ParseDuration(d.raw)
		if err != nil || v <= 0 {
			return a.fail(d.key, fmt.Errorf("%q is not a positive duration such as \"180s\" or \"10m\"", d.raw))
		}
		if !a.narrowOnly || v < *d.dst {
			*d.dst = v
			p.setting(d.key, v.String(), a.layer, a.file)
		}
	}
	return nil
}

func (a *applier) limits(c *fileConfig) error {
	p, l := a.p, c.Limits
	set := func(key string, v int64, dst *int64) {
		if !a.narrowOnly || *dst == 0 || v < *dst {
			*dst = v
			p.setting(key, strconv.FormatInt(v, 10), a.layer, a.file)
		}
	}
	for _, s := range []struct {
		key string
		raw string
		dst *int64
	}{{"limits.memory", l.Memory, &p.Limits.MemoryBytes}, {"limits.file_size", l.FileSize, &p.Limits.FileSizeBytes}, {"limits.tmp_size", l.TmpSize, &p.Limits.TmpBytes},
		{"limits.results_per_run", l.ResultsPerRun, &p.ResultsPerRun}, {"limits.session_trace", l.SessionTrace, &p.SessionTrace}} {
		if s.raw == "" {
			continue
		}
		v, err := ParseSize(s.raw)
		if err != nil {
			return a.fail(s.key, err)
		}
		set(s.key, v, s.dst)
	}
	for _, n := range []struct {
		key string
		v   *int64
		dst *int64
	}{{"limits.processes", l.Processes, &p.Limits.Processes}, {"limits.cpu_seconds", l.CPUSeconds, &p.Limits.CPUSeconds}, {"limits.open_files", l.OpenFiles, &p.Limits.OpenFiles}} {
		if n.v == nil {
			continue
		}
		if *n.v <= 0 {
			return a.fail(n.key, fmt.Errorf("must be a positive number, not %d", *n.v))
		}
		set(n.key, *n.v, n.dst)
	}
	return nil
}

// ParseSize reads a byte size: a number with an optional unit B, KiB, MiB,
// GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000).
func ParseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size such as \"512MiB\" or \"4GiB\"", s)
	}
	return n * mult, nil
}

// readPath checks one sandbox.read_paths entry and returns it clean: an
// absolute path (or ~/...) that exists, lies outside the workspace, and
// that no protected pattern guards against reading, as written or as
// resolved.
func (p *Policy) readPath(raw string) (string, error) {
	x := p.expandHome(raw)
	if !filepath.IsAbs(x) {
		return "", fmt.Errorf("%q is not an absolute path", raw)
	}
	x = filepath.Clean(x)
	real, err := filepath.EvalSymlinks(x)
	if err != nil {
		return "", fmt.Errorf("%q: %w", raw, err)
	}
	if real == "/" || workspace.Within(real, p.Workspace) || workspace.Within(p.Workspace, real) {
		return "", fmt.Errorf("%q overlaps the workspace; only paths outside it can be added", raw)
	}
	if a := p.Protection(ActRead, x, real); a != nil {
		return "", fmt.Errorf("%q is protected by %s and is never exposed", raw, a)
	}
	if a := p.ProtectedWithin(real); a != nil || p.ProtectedWithin(x) != nil {
		if a == nil {
			a = p.ProtectedWithin(x)
		}
		return "", fmt.Errorf("%q holds paths protected by %s, which exposing it would expose", raw, a)
	}
	// A read-only mount does not stop a connect to a unix socket in it:
	// the directories where the host keeps its sockets (docker, the SSH
	// agent, the session bus, X, tmux, PostgreSQL) and the kernel's own
	// are never exposed, nor anything in the shared temporary
	// directories, where any program may make one at any time.
	for _, d := range p.socketDirs() {
		if workspace.Within(real, d) || workspace.Within(x, d) || workspace.Within(d, real) || workspace.Within(d, x) {
			return "", fmt.Errorf("%q is or holds %s, where the host keeps sockets or devices that a command could reach there; name a directory that holds only what it needs", raw, d)
		}
	}
	if fi, err := os.Stat(real); err == nil && fi.Mode()&(os.ModeSocket|os.ModeDevice|os.ModeNamedPipe) != 0 {
		return "", fmt.Errorf("%q is a socket, device or pipe, not a file or directory to read", raw)
	}
	return x, nil
}

// socketDirs are the host directories that hold sockets and devices.
func (p *Policy) socketDirs() []string {
	dirs := []string{"/run", "/var/run", "/proc", "/sys", "/dev", "/tmp", "/var/tmp", "/dev/shm"}
	if d := p.getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		dirs = append(dirs, filepath.Clean(d))
	}
	return dirs
}

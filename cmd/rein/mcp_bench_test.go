//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/internal/testenv"
	"github.com/reinhq/rein/mcpserver"
	"github.com/reinhq/rein/policy"
	"github.com/reinhq/rein/sandbox"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/sqlite"
)

// BenchmarkMCPShellWarm times a shell call of true through rein mcp over
// stdio, from the Go SDK's client, with the server's warm sandboxes (the
// time a model takes to answer gives the next one the moment it needs),
// interleaved with bare bubblewrap running /bin/true in the same
// namespaces; it reports the medians and their ratio.
func BenchmarkMCPShellWarm(b *testing.B) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("no bubblewrap")
	}
	root, _ := filepath.EvalSymlinks(b.TempDir())
	ws, home := filepath.Join(root, "w"), filepath.Join(root, "home")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(home, 0o755)
	cmd := exec.Command(os.Args[0], "mcp", "--approve", "all", "--rung", "bwrap", "--org-policy", os.DevNull, "--user-policy", os.DevNull, "--project-policy", os.DevNull)
	cmd.Env = []string{"REIN_TEST_MAIN=1", "HOME=" + home, "PATH=" + os.Getenv("PATH")}
	cmd.Dir = ws
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	bare := testenv.BareBwrapArgs()
	call := func() time.Duration {
		t0 := time.Now()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"line": "true"}})
		d := time.Since(t0)
		if err != nil || r.IsError {
			b.Fatalf("%v %+v", err, r)
		}
		return d
	}
	call() // the first call starts the session's run and its first sandbox cold
	var calls, bares []time.Duration
	for b.Loop() {
		// A model's answer takes longer than the next sandbox's start.
		time.Sleep(30 * time.Millisecond)
		calls = append(calls, call())
		time.Sleep(30 * time.Millisecond)
		t0 := time.Now()
		if err := exec.Command(bw, bare...).Run(); err != nil {
			b.Fatal(err)
		}
		bares = append(bares, time.Since(t0))
	}
	med := testenv.MedianMS
	b.ReportMetric(med(calls), "call-ms")
	b.ReportMetric(med(bares), "bare-ms")
	b.ReportMetric(med(calls)/med(bares), "ratio")
}

// profileEnv, in the environment of the test binary run as rein
// (REIN_TEST_MAIN), names a file to write a CPU profile of the process
// to: until it exits, or until SIGUSR1, whichever comes first; cpuEnv
// names a file to write the CPU time the process took (user and system,
// in microseconds) to when it exits. Only test builds read them.
const (
	profileEnv = "REIN_TEST_CPUPROFILE"
	cpuEnv     = "REIN_TEST_CPUTIME"
)

// profiled runs main under the CPU profile profileEnv asks for, and
// writes the CPU time cpuEnv asks for.
func profiled(main func() int) int {
	if path := os.Getenv(cpuEnv); path != "" {
		defer func() {
			var ru syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			os.WriteFile(path, []byte(strconv.FormatInt(ru.Utime.Nano()/1000+ru.Stime.Nano()/1000, 10)), 0o644)
		}()
	}
	path := os.Getenv(profileEnv)
	if path == "" {
		return main()
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rein: %s: %v\n", profileEnv, err)
		return 1
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "rein: %s: %v\n", profileEnv, err)
		return 1
	}
	stopped := make(chan struct{})
	stop := func() {
		select {
		case <-stopped:
		default:
			close(stopped)
			pprof.StopCPUProfile()
			f.Close()
		}
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		<-usr1
		stop()
	}()
	code := main()
	signal.Stop(usr1)
	stop()
	return code
}

// mcpBenchCalls is how many read_file calls each way times (each HTTP
// session of the 20 makes a fifth of them).
func mcpBenchCalls() int {
	if n, err := strconv.Atoi(os.Getenv("REIN_BENCH_CALLS")); err == nil && n > 0 {
		return n
	}
	return 2000
}

// percentiles are a latency distribution's p50, p90 and p99 in
// microseconds, as bench.mjs prints them.
type percentiles struct {
	Calls int     `json:"calls"`
	P50   float64 `json:"p50_us"`
	P90   float64 `json:"p90_us"`
	P99   float64 `json:"p99_us"`
	Rate  float64 `json:"calls_per_s"`
	// CPU is the server's CPU time a call, in microseconds.
	CPU float64 `json:"-"`
}

func percentilesOf(ds []time.Duration) percentiles {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) float64 {
		return float64(s[min(len(s)-1, int(p/100*float64(len(s))))].Nanoseconds()) / 1000
	}
	return percentiles{Calls: len(s), P50: at(50), P90: at(90), P99: at(99)}
}

// BenchmarkMCPReadFile4K times read_file of a 4 KiB file through rein
// mcp from the official TypeScript SDK's client (testdata/tsclient's
// bench.mjs): over stdio, over streamable HTTP with one session, and with
// 20 sessions calling at once; and the same call through a router in
// this process, trace included, measured in the same run. It reports
// each p50 (and the stdio and HTTP p90 and p99) in microseconds, and each
// p50 over the in-process one. Run it with -benchtime 1x; REIN_BENCH_CALLS
// sets the calls (2000), and REIN_MCP_CPUPROFILE=DIR writes a CPU profile
// of each server process into DIR (stdio.pprof, http.pprof, http20.pprof).
func BenchmarkMCPReadFile4K(b *testing.B) {
	dir, _ := filepath.Abs("testdata/tsclient")
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(b, "node is not installed")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		testenv.Missing(b, "the TypeScript SDK is not installed: npm ci --prefix %s", dir)
	}
	root, _ := filepath.EvalSymlinks(b.TempDir())
	ws, home := filepath.Join(root, "w"), filepath.Join(root, "home")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(home, 0o755)
	content := bytes.Repeat([]byte(strings.Repeat("x", 63)+"\n"), 64)
	if err := os.WriteFile(filepath.Join(ws, "f4k.txt"), content, 0o644); err != nil {
		b.Fatal(err)
	}
	profiles := os.Getenv("REIN_MCP_CPUPROFILE")
	calls := mcpBenchCalls()
	// env is the environment of a server (rein mcp, or the floor when
	// floor names how it serves) and of the client that starts it.
	env := func(profile, floor string) []string {
		e := []string{"REIN_TEST_MAIN=1", "HOME=" + home, "PATH=" + os.Getenv("PATH"), cpuEnv + "=" + filepath.Join(root, profile+".cpu")}
		if profiles != "" {
			e = append(e, profileEnv+"="+filepath.Join(profiles, profile+".pprof"))
		}
		if floor != "" {
			e = append(e, floorEnv+"="+floor)
		}
		return e
	}
	serve := []string{"mcp", "--approve", "all", "--org-policy", os.DevNull, "--user-policy", os.DevNull, "--project-policy", os.DevNull}
	node := func(env []string, args ...string) percentiles {
		cmd := exec.Command("node", append([]string{filepath.Join(dir, "bench.mjs")}, args...)...)
		cmd.Dir, cmd.Env = ws, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("bench.mjs %s: %v\n%s%s", args[0], err, out, stderr.Bytes())
		}
		var p percentiles
		if err := json.Unmarshal(out, &p); err != nil || p.Calls == 0 {
			b.Fatalf("bench.mjs %s: %v: %s", args[0], err, out)
		}
		return p
	}
	// cpu is the CPU time the server of that profile took a call, its
	// start and end spread over them.
	cpu := func(profile string, p percentiles, sessions int) float64 {
		data, err := os.ReadFile(filepath.Join(root, profile+".cpu"))
		if err != nil {
			b.Fatalf("the server's CPU time: %v", err)
		}
		us, _ := strconv.ParseFloat(string(data), 64)
		return us / float64(p.Calls+sessions*50)
	}
	stdio := func(profile, floor string) percentiles {
		p := node(env(profile, floor), append([]string{"stdio", "f4k.txt", strconv.Itoa(calls), "--", os.Args[0]}, serve...)...)
		p.CPU = cpu(profile, p, 1)
		return p
	}
	http := func(sessions int, profile string, floor bool) percentiles {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		srv := exec.Command(os.Args[0], append(serve, "--http", addr, "--no-token")...)
		srv.Dir, srv.Env = ws, env(profile, "")
		if floor {
			srv.Env = env(profile, addr)
		}
		if err := srv.Start(); err != nil {
			b.Fatal(err)
		}
		stopped := false
		defer func() {
			if !stopped {
				srv.Process.Kill()
				srv.Wait()
			}
		}()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("rein mcp --http %s did not listen", addr)
			}
		}
		p := node(env("client", ""), "http", "f4k.txt", strconv.Itoa(max(calls/sessions, 1)), strconv.Itoa(sessions), "http://"+addr+"/")
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
		stopped = true
		p.CPU = cpu(profile, p, sessions)
		return p
	}
	inProcess := func() percentiles {
		mode := policy.ModeAsk
		p, err := policy.Load(policy.Options{Workspace: ws, Home: home, OrgFile: os.DevNull, UserFile: os.DevNull, ProjectFile: os.DevNull, Mode: &mode})
		if err != nil {
			b.Fatal(err)
		}
		// As rein mcp opens its trace: keyed, behind the redactor of the
		// environment's secrets, with the preview an MCP client sees.
		key, err := trace.LoadKey(filepath.Join(root, "keys", "trace.key"))
		if err != nil {
			b.Fatal(err)
		}
		red := trace.NewRedactor(trace.SecretValues(os.Environ(), p.EnvSecrets...)...)
		store, err := sqlite.Open(filepath.Join(root, "inproc.db"), red, sqlite.WithKey(key))
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		reg, err := tool.Builtin()
		if err != nil {
			b.Fatal(err)
		}
		r, err := tool.NewRouter(reg, tool.Config{Policy: p, Surface: tool.SurfaceCoding, Store: store, Redactor: red,
			Results: &tool.Results{Dir: filepath.Join(root, "results")}, Profile: sandbox.Profile{}, PreviewChars: mcpserver.PreviewChars, Source: "mcp"})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close("ok")
		args := json.RawMessage(`{"path":"f4k.txt"}`)
		ctx := context.Background()
		var ds []time.Duration
		for i := range 50 + calls {
			t0 := time.Now()
			if env := r.Call(ctx, "read_file", args); env.Status != tool.OK {
				b.Fatal(env.Reason)
			}
			if i >= 50 {
				ds = append(ds, time.Since(t0))
			}
		}
		return percentilesOf(ds)
	}
	for b.Loop() {
		in := inProcess()
		runs := []struct {
			name string
			p    percentiles
		}{
			{"stdio", stdio("stdio", "")},
			{"stdio-floor", stdio("stdio-floor", "stdio")},
			{"http", http(1, "http", false)},
			{"http-floor", http(1, "http-floor", true)},
			{"http20", http(20, "http20", false)},
		}
		b.ReportMetric(in.P50, "inproc-p50-us")
		for _, m := range runs {
			b.ReportMetric(m.p.P50, m.name+"-p50-us")
			b.ReportMetric(m.p.CPU, m.name+"-cpu-us")
			if !strings.HasSuffix(m.name, "-floor") {
				b.ReportMetric(m.p.P90, m.name+"-p90-us")
				b.ReportMetric(m.p.P99, m.name+"-p99-us")
				b.ReportMetric(m.p.P50/in.P50, m.name+"-ratio")
			}
		}
	}
}

// floorEnv, in the environment of the test binary, makes it the floor
// of BenchmarkMCPReadFile4K instead of rein: an MCP server of the same
// SDK whose read_file returns the file as rein's does (the text, and the
// structured content with it under an output schema), with nothing of
// rein between: no router, policy, redaction or trace. Its value is
// "stdio" or the address to serve streamable HTTP on.
const floorEnv = "REIN_TEST_MCP_FLOOR"

func init() {
	how := os.Getenv(floorEnv)
	if how == "" {
		return
	}
	os.Exit(profiled(func() int {
		if err := serveFloor(how); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}))
}

func serveFloor(how string) error {
	s := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
	schema := json.RawMessage(`{"type": "object", "properties": {"status": {"type": "string"}, "text": {"type": "string"},
		"chars": {"type": "integer"}, "elided_chars": {"type": "integer"}}, "required": ["status", "text", "chars", "elided_chars"]}`)
	in := json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}`)
	s.AddTool(&mcp.Tool{Name: "read_file", InputSchema: in, OutputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ Path string }
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(args.Path)
		if err != nil {
			return nil, err
		}
		text := "read_file: ok\n" + string(data)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}},
			StructuredContent: map[string]any{"status": "ok", "text": text, "chars": len(data), "elided_chars": 0}}, nil
	})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if how == "stdio" {
		return s.Run(ctx, &mcp.StdioTransport{})
	}
	hs := &nethttp.Server{Addr: how, Handler: mcp.NewStreamableHTTPHandler(func(*nethttp.Request) *mcp.Server { return s }, nil)}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	if err := hs.ListenAndServe(); err != nethttp.ErrServerClosed {
		return err
	}
	return nil
}

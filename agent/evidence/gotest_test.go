package evidence

import (
	"slices"
	"testing"

	"github.com/reinhq/rein/shell"
)

var testParser = shell.Parser{Home: "/home/rein"}

// The lines GoTestLine returns are printed by the grammar's printer,
// which quotes every word with a byte outside its small safe set (an =
// among them).
func TestGoTestLine(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"go test ./...", "go test -json '-count=1' ./..."},
		{"go test", "go test -json '-count=1'"},
		{"'go' test ./...", "go test -json '-count=1' ./..."},
		// A path to a program named go may be the run's own.
		{"/usr/local/go/bin/go test -count=1 ./...", ""},
		{"./go test ./...", ""},
		// -count is kept as given; a value that reads -count is not one.
		{"go test -count=3 ./...", "go test -json '-count=3' ./..."},
		{"go test -run -count ./...", "go test -json '-count=1' -run -count ./..."},
		{"go test -run 'TestA|TestB' ./pkg", "go test -json '-count=1' -run 'TestA|TestB' ./pkg"},
		{"go test -run='Test A' ./pkg", "go test -json '-count=1' '-run=Test A' ./pkg"},
		{"go test -count 2 -race -short -timeout 5m -p 1 -parallel 4 -cpu 1,2 ./a ./b", "go test -json -count 2 -race -short -timeout 5m -p 1 -parallel 4 -cpu 1,2 ./a ./b"},
		{"go test --count=1 -failfast=true -shuffle on -skip TestSlow ./...", "go test -json '--count=1' '-failfast=true' -shuffle on -skip TestSlow ./..."},
		{"go test -tags 'a b' -ldflags=-s -gcflags=all=-N -mod=vendor -vet=off -trimpath -buildvcs=false ./...", "go test -json '-count=1' -tags 'a b' '-ldflags=-s' '-gcflags=all=-N' '-mod=vendor' '-vet=off' -trimpath '-buildvcs=false' ./..."},
		{"go test -cover -covermode atomic -coverpkg ./... -coverprofile c.out ./...", "go test -json '-count=1' -cover -covermode atomic -coverpkg ./... -coverprofile c.out ./..."},
		// Flags may follow the packages; a value may look like a flag.
		{"go test ./... -run X -count=1", "go test -json ./... -run X '-count=1'"},
		{"go test -run -args ./...", "go test -json '-count=1' -run -args ./..."},
		// The binary's own arguments, and the testing package's choices.
		{"go test ./... -args -update -test.run=X", "go test -json '-count=1' ./... -args -update '-test.run=X'"},
		{"go test ./pkg -- -golden", "go test -json '-count=1' ./pkg -- -golden"},
		{"go test ~/src/...", "go test -json '-count=1' /home/rein/src/..."},
		{"go test ./... 2>&1", "go test -json '-count=1' ./... 2>&1"},
		{"go test ./... 2> err.txt", "go test -json '-count=1' ./... 2> err.txt"},
		{"go test ./... < /dev/null", "go test -json '-count=1' ./... < /dev/null"},
		{"go test ./... # the gate", "go test -json '-count=1' ./..."},
		// -v goes: it would turn the report's marker off, and the report
		// is verbose; a value of another flag that reads -v stays.
		{"go test -v ./...", "go test -json '-count=1' ./..."},
		{"go test -v=false -count=1 ./... -v", "go test -json '-count=1' ./..."},
		{"go test --v=true ./...", "go test -json '-count=1' ./..."},
		{"go test -run -v ./...", "go test -json '-count=1' -run -v ./..."},
		{"go test ./... -args -v", "go test -json '-count=1' ./... -args -v"},

		// Flags that conflict with the report or change what runs.
		{"go test -json ./...", ""},
		{"go test -json=true ./...", ""},
		{"go test ./... -json", ""},
		{"go test -v=test2json ./...", ""},
		{"go test -c ./pkg", ""},
		{"go test -o x.test ./pkg", ""},
		{"go test -exec echo ./...", ""},
		{"go test -list . ./...", ""},
		{"go test -bench . ./...", ""},
		{"go test -fuzz FuzzX ./pkg", ""},
		{"go test -n ./...", ""},
		{"go test -x ./...", ""},
		{"go test -toolexec true ./...", ""},
		{"go test -overlay o.json ./...", ""},
		{"go test -modfile alt.mod ./...", ""},
		{"go test -test.run X ./...", ""},
		{"go test -frobnicate ./...", ""},
		{"go test -race=maybe ./...", ""},
		{"go test -run", ""},
		{"go test ./... -args -test.v=false", ""},
		{"go test ./... -- --test.paniconexit0=false", ""},
		{"go test ./... -args -test.bench=.", ""},
		// A word after the packages and a flag goes to the binary.
		{"go test ./a -race ./b", ""},
		{"go test -", ""},
		{"go test --", "go test -json '-count=1' --"},
		// Not one go test.
		{"go build ./...", ""},
		{"go vet ./... && go test ./...", ""},
		{"go test ./...; echo done", ""},
		{"go test ./... | tee log", ""},
		{"cd sub && go test ./...", ""},
		{"go -C sub test ./...", ""},
		{"gotest ./...", ""},
		{"ago test", ""},
		{"time go test ./...", ""},
		{"env GOFLAGS=-v go test ./...", ""},
		{"GOFLAGS=-v go test ./...", ""},
		{"CI=1 go test ./...", ""},
		{"go test ./... &", ""},
		{"source .venv/bin/activate && go test ./...", ""},
		{"go", ""},
		{"go test ./... > log", ""},
		{"go test ./... >> log 2>&1", ""},
		{"go test $PKGS", ""},
		{"go test ./... &", ""},
	} {
		t.Run(tc.line, func(t *testing.T) {
			got, ok := GoTestLine(testParser, tc.line)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("GoTestLine(%q) = %q, %v; want %q", tc.line, got, ok, tc.want)
			}
			if ok {
				checkGoTestLine(t, tc.line, got)
			}
		})
	}
}

// checkGoTestLine checks that got, which GoTestLine made of line, runs
// line's argv with -json after "test", and line's redirects.
func checkGoTestLine(t *testing.T, line, got string) {
	t.Helper()
	before, err := testParser.Parse(line)
	if err != nil {
		t.Fatalf("GoTestLine accepted %q, which does not parse: %v", line, err)
	}
	after, err := testParser.Parse(got)
	if err != nil {
		t.Fatalf("GoTestLine(%q) = %q, which does not parse: %v", line, got, err)
	}
	b, a := before.Stages(), after.Stages()
	if len(b) != 1 || len(a) != 1 {
		t.Fatalf("GoTestLine(%q) = %q: %d and %d stages", line, got, len(b), len(a))
	}
	added := []string{"-json"}
	if !hasCount(withoutVerbose(b[0].Argv[2:])) {
		added = append(added, "-count=1")
	}
	want := slices.Concat(b[0].Argv[:2], added, withoutVerbose(b[0].Argv[2:]))
	if !slices.Equal(a[0].Argv, want) || !slices.Equal(a[0].Redirects, b[0].Redirects) || len(after.Pipelines) != 1 {
		t.Fatalf("GoTestLine(%q) = %q, which runs %q %v; want %q %v", line, got, a[0].Argv, a[0].Redirects, want, b[0].Redirects)
	}
}

// FuzzGoTestLine: whatever line GoTestLine accepts, what it returns runs
// the same argv with -json after "test", and the same redirects. The
// seeds are in testdata/fuzz/FuzzGoTestLine.
func FuzzGoTestLine(f *testing.F) {
	f.Fuzz(func(t *testing.T, line string) {
		got, ok := GoTestLine(testParser, line)
		if !ok {
			if got != "" {
				t.Fatalf("GoTestLine(%q) refused, returning %q", line, got)
			}
			return
		}
		checkGoTestLine(t, line, got)
	})
}
